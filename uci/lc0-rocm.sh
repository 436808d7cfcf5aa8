#!/bin/sh
# UCI launcher for lc0-rocm: point your chess GUI at this file.
#
# It runs `python -m lc0_rocm` with every argument passed on, e.g.
#   lc0-rocm.sh --weights=/path/to/net.pb.gz --backend=rocm
# Settings (environment variables, all optional):
#   LC0ROCM_PYTHON  the Python that has lc0-rocm installed (default: python3)
#   LC0ROCM_ARGS    extra arguments, e.g. "--backend=cpu --threads=2"
#   (LC0_ROCM_PYTHON and LC0_ROCM_ARGS, their former names, still work)
# Without --weights the engine uses the newest net in the working directory
# (or its networks/ and weights/ folders), then in ~/.cache/lc0-rocm
# (`lc0-rocm fetch-net maia-1900` puts one there).
PYTHON="${LC0ROCM_PYTHON:-${LC0_ROCM_PYTHON:-python3}}"
ARGS="${LC0ROCM_ARGS:-${LC0_ROCM_ARGS:-}}"
HERE="$(cd "$(dirname "$0")" && pwd)"
# A source checkout works without installing: put it on the path.
if [ -d "$HERE/../lc0_rocm" ]; then
    PYTHONPATH="$HERE/..${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONPATH
fi
# shellcheck disable=SC2086  # ARGS is a list of words on purpose
exec "$PYTHON" -u -m lc0_rocm $ARGS "$@"
