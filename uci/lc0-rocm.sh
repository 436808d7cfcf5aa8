#!/bin/sh
# UCI launcher for lc0-rocm: point your chess GUI at this file.
#
# It runs the engine with every argument passed on, e.g.
#   lc0-rocm.sh --weights=/path/to/net.pb.gz --backend=rocm
# Settings (environment variables, all optional):
#   LC0ROCM_PYTHON  the Python that has lc0-rocm installed (default: the
#                   checkout's .venv made by the README's quick start, else
#                   the active virtual environment's, else python3)
#   LC0ROCM_ARGS    extra arguments, e.g. "--backend=cpu --threads=2"
#   (LC0_ROCM_PYTHON and LC0_ROCM_ARGS, their former names, still work)
# Without --weights the engine uses the newest net in the working directory
# (or its networks/ and weights/ folders), then in ~/.cache/lc0-rocm
# (`lc0-rocm fetch-net maia-1900` puts one there).
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${LC0ROCM_PYTHON:-${LC0_ROCM_PYTHON:-}}"
if [ -z "$PYTHON" ]; then
    if [ -x "$HERE/../.venv/bin/python" ]; then
        PYTHON="$HERE/../.venv/bin/python"
    elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
        PYTHON="$VIRTUAL_ENV/bin/python"
    else
        PYTHON=python3
    fi
fi
ARGS="${LC0ROCM_ARGS:-${LC0_ROCM_ARGS:-}}"
# A source checkout works without installing: put it on the path.
if [ -d "$HERE/../lc0_rocm" ]; then
    PYTHONPATH="$HERE/..${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONPATH
fi
# A Python without the package or its dependencies: one line that says what
# to set, not a traceback.
# shellcheck disable=SC2086  # ARGS is a list of words on purpose
exec "$PYTHON" -u -c '
import sys
try:
    import chess, cffi, numpy
    from lc0_rocm.cli import main
except ImportError as e:
    sys.exit(f"lc0-rocm.sh: {sys.executable} cannot import {e.name or e}: set LC0ROCM_PYTHON to the "
             "Python lc0-rocm is installed in (e.g. the checkout'"'"'s .venv/bin/python)")
sys.argv[0] = "lc0-rocm"
sys.exit(main())
' $ARGS "$@"
