"""The engine's first start with an empty build cache (issue 69), through the
real process: `isready` waits for the chess core's build with `info string`
progress lines and then says `readyok`; the first `go` answers within its
limit; a build killed with the engine leaves no compiler running and its
folder is removed by the next build, which compiles only the files it had
not finished; a cut library in the cache is rebuilt
after a one-line notice, and the engine answers."""
from __future__ import annotations

import os
import re
import signal
import time

import pytest

from lc0_rocm import native_core
from tests.uci_process import UciProcess

pytestmark = pytest.mark.real_engine


def processes_using(path) -> list[str]:
    """Command lines of the processes that name `path` in their arguments."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd:
            found.append(cmd[:200])
    return found


def start(tmp_path, cache):
    return UciProcess(tmp_path, env={"LC0ROCM_BUILD_CACHE": str(cache)})


@pytest.mark.skipif(not native_core.available()[0], reason="no C++ compiler: nothing to build")
def test_first_start_builds_at_isready_with_progress_and_recovers(tmp_path, maia_path):
    cache = tmp_path / "builds"

    # 1. killed mid-build: no compiler left running, the folder stays behind
    eng = start(tmp_path, cache)
    eng.send("uci")
    eng.send("isready")
    done = 0
    while done < 2:                   # killed once two files are compiled
        line = eng.read_until("info string building the chess core", timeout=120)[-1]
        found = re.search(r"file (\d+) of", line)
        done = int(found.group(1)) if found else 0
    eng.proc.send_signal(signal.SIGKILL)
    eng.wait_exit(30)
    # A loaded 2-core machine can take seconds to start a guard's Python (it
    # then sees its parent gone and ends its group) or to reap a compiler.
    killed = time.monotonic()
    while processes_using(cache) and time.monotonic() - killed < 15.0:
        time.sleep(0.05)
    assert processes_using(cache) == [], f"still running {time.monotonic() - killed:.1f} s after the kill"
    print(f"build processes gone {time.monotonic() - killed:.2f} s after the kill")
    assert list(cache.glob(".build-core-*")), "the killed build's folder should remain until the next build"
    eng.close()

    # 2. the next start: progress lines at isready, readyok, the go answers in time
    eng = start(tmp_path, cache)
    began = time.monotonic()
    eng.send("uci")
    eng.read_until("uciok", timeout=30)
    eng.send(f"setoption name WeightsFile value {maia_path}")
    eng.send("setoption name Backend value cpu")
    eng.send("isready")
    lines = eng.read_until("readyok", timeout=600)
    progress = [line for line in lines if line.startswith("info string building the chess core")]
    assert progress and re.search(r"file \d+ of \d+, \d+ s", progress[0]), lines
    kept = re.search(r"file (\d+) of .*kept from an interrupted build", progress[0])
    assert kept and int(kept.group(1)) >= 2, progress[0]   # the killed build's objects, not compiled again
    times = [t for t, line in eng.arrived if line.startswith("info string building") or line == "readyok"]
    gaps = [b - a for a, b in zip([began] + times, times)]
    assert max(gaps) < 8.0, gaps            # a line at least every 5 s (a little slack for load)
    assert not list(cache.glob(".build-core-*")), "the killed build's folder is cleaned"
    eng.send("go movetime 1000")
    sent = time.monotonic()
    eng.read_until("bestmove", timeout=30)
    assert time.monotonic() - sent < 5.0
    eng.send("quit")
    eng.wait_exit(30)
    eng.close()

    # 3. a library cut short (a power loss after an unsynced rename): rebuilt, and it answers
    lib = next(cache.glob("core-*/" + native_core.LIBRARY_NAME))
    data = lib.read_bytes()
    lib.write_bytes(data[:len(data) // 2])
    eng = start(tmp_path, cache).start(maia_path)
    eng.send("go nodes 20")
    assert eng.read_until("bestmove", timeout=60)[-1] != "bestmove (none)"
    assert "damaged" in eng.stderr_text() and lib.stat().st_size == len(data)
    eng.close()


@pytest.mark.gpu
@pytest.mark.slow
def test_a_cut_gpu_library_is_rebuilt_at_isready_and_the_engine_answers(tmp_path, maia_path):
    """The GPU library's build cache: a copy of the built library cut in half
    in a private cache is found damaged, rebuilt at `isready` (progress
    lines, then readyok; minutes) and the engine plays on the GPU."""
    import shutil

    from lc0_rocm.backends import native
    name = next((n for n in ("rocm-fp16", "cuda-fp16") if native.is_available(n)[0]), None)
    if name is None:
        pytest.skip(f"no GPU backend usable here ({native.is_available('cuda')[1]})")
    lib = native.build(native.split_name(name)[0])          # the shared cache's, built if needed
    cache = tmp_path / "builds"
    shutil.copytree(lib.parent, cache / lib.parent.name)
    core = native_core.build()
    shutil.copytree(core.parent, cache / core.parent.name)
    copy = cache / lib.parent.name / lib.name
    data = copy.read_bytes()
    copy.write_bytes(data[:len(data) // 2])
    eng = start(tmp_path, cache)
    try:
        eng.send("uci")
        eng.read_until("uciok", timeout=60)
        eng.send(f"setoption name WeightsFile value {maia_path}")
        eng.send(f"setoption name Backend value {name}")
        eng.send("isready")
        lines = eng.read_until("readyok", timeout=1800)
        assert any(line.startswith("info string building the native library") for line in lines), lines
        assert "damaged" in eng.stderr_text()
        assert copy.stat().st_size > len(data) // 2
        eng.send("go nodes 50")
        assert eng.read_until("bestmove", timeout=120)[-1] != "bestmove (none)"
    finally:
        eng.close()
