"""uci/lc0-rocm.sh (issue 69): it finds the quick start's .venv by itself, and
a Python that lacks the package gets one line saying what to set, not a
traceback."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "uci" / "lc0-rocm.sh"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a POSIX shell script")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "LC0ROCM_PYTHON", "LC0_ROCM_PYTHON")}
    env.update(extra)
    return env


def test_a_python_without_the_package_gets_one_line(tmp_path):
    venv.create(tmp_path / "empty", with_pip=False)     # a Python with no packages at all
    python = tmp_path / "empty" / "bin" / "python"
    proc = subprocess.run(["sh", str(LAUNCHER)], input="uci\n", capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=clean_env(LC0ROCM_PYTHON=str(python)))
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "set LC0ROCM_PYTHON" in lines[0] and "Traceback" not in proc.stderr


def test_the_checkouts_venv_is_found(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "uci").mkdir(parents=True)
    shutil.copy(LAUNCHER, checkout / "uci" / "lc0-rocm.sh")
    (checkout / ".venv" / "bin").mkdir(parents=True)
    marker = tmp_path / "venv-python-ran"
    fake = checkout / ".venv" / "bin" / "python"      # stands for the quick start's venv
    fake.write_text(f'#!/bin/sh\ntouch "{marker}"\nexec "{sys.executable}" "$@"\n')
    fake.chmod(0o755)
    proc = subprocess.run(["sh", str(checkout / "uci" / "lc0-rocm.sh")], input="uci\nquit\n",
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=clean_env(PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0 and "uciok" in proc.stdout.splitlines(), proc.stderr[-2000:]
    assert marker.exists()
