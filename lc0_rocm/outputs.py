"""Files the commands write (make-net -o, backendbench --csv/--json/--plot):
checked before the work starts, so a mistyped folder costs nothing."""
from __future__ import annotations

import os
import pathlib
import sys

from lc0_rocm.errors import Lc0RocmError


class OutputPathError(Lc0RocmError, ValueError):
    """An output path the command cannot write; the message says why."""


def check_writable(path: str | os.PathLike[str], what: str = "output") -> pathlib.Path:
    """`path` as a Path when a file can be written there, else OutputPathError.

    The file itself is not created: its folder must exist and be writable,
    and an existing file must be a writable file, not a folder."""
    target = pathlib.Path(path).expanduser()
    folder = target.parent
    try:
        if target.is_dir():
            raise OutputPathError(f"cannot write {what} {target}: it is a folder")
        if not folder.is_dir():
            raise OutputPathError(f"cannot write {what} {target}: folder {folder} does not exist")
        if target.exists() and not os.access(target, os.W_OK):
            raise OutputPathError(f"cannot write {what} {target}: permission denied")
        if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
            raise OutputPathError(f"cannot write {what} {target}: folder {folder} is not writable")
    except OSError as e:  # a name the system rejects (too long, ...)
        raise OutputPathError(f"cannot write {what} {target}: {e.strerror or e}") from None
    return target


def silence_stdout() -> None:
    """Point a closed stdout (the reader went away: `lc0-rocm -h | head -1`,
    a GUI that quit) at /dev/null, so that the interpreter's last flush at
    exit does not print a BrokenPipeError traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass

