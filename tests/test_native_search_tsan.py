"""The native search's threads under ThreadSanitizer (scripts/tsan_search.py):
search threads picking at once, with tree reuse and deferred two-fold fixes,
raise no sanitizer report. The core is built sanitized in a folder of its
own (about 20 s)."""
from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest

from lc0_rocm import native_core

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("tsan_search", ROOT / "scripts" / "tsan_search.py")
tsan_search = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tsan_search)

COMPILER = os.environ.get("TSAN_CXX", "g++")

pytestmark = [
    pytest.mark.skipif(not native_core.available()[0],
                       reason=f"native core unavailable: {native_core.available()[1]}"),
    pytest.mark.skipif(tsan_search.sanitizer_runtime(COMPILER) is None,
                       reason=f"{COMPILER} has no ThreadSanitizer runtime (libtsan.so)"),
]


def test_threads_picking_at_once_raise_no_sanitizer_report(tmp_path, capsys):
    assert tsan_search.main(["--threads", "4", "--nodes", "2000", "--build-cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no sanitizer report" in out
    deferred = int(out.split("after a shared pick:")[1].split()[0])
    assert deferred > 0                    # the deferred two-fold path ran under the sanitizer
