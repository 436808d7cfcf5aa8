"""The command line as a user meets it (issue 10, points 6, 8, 9 and 13):
run through `python -m lc0_rocm` in a subprocess; a user's mistake ends in
one line on stderr and an exit code, never a traceback; Ctrl-C stops
cleanly with 130; long work shows progress."""
from __future__ import annotations

import io
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import lc0_rocm
from lc0_rocm.progress import Progress

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def env(tmp_path):
    """A user's environment with an empty cache and no lc0 data folder."""
    e = dict(os.environ, PYTHONPATH=str(ROOT), LC0ROCM_CACHE=str(tmp_path / "cache"),
             XDG_DATA_HOME=str(tmp_path / "data"))
    e.pop("LC0_ROCM_CACHE", None)
    return e


def lc0_rocm_cmd(*args, env, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "lc0_rocm", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def one_line_error(proc, code, *phrases):
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    for phrase in phrases:
        assert phrase in last, proc.stderr
    return last


def test_version(env):
    for flag in ("--version", "-V"):
        proc = lc0_rocm_cmd(flag, env=env)
        assert proc.returncode == 0 and proc.stdout.strip() == f"lc0-rocm {lc0_rocm.__version__}"


@pytest.mark.parametrize("args,code,phrases", [
    (["-o", "{tmp}/missing/x.pb.gz"], 2, ["cannot write", "does not exist"]),
    (["-o", "{tmp}"], 2, ["is a folder"]),
    (["-o", "{tmp}/x.pb.gz", "--blocks", "-3"], 2, ["--blocks must be at least 1"]),
    (["-o", "{tmp}/x.pb.gz", "--input-format", "99"], 2, ["not an lc0 input format", "1 (INPUT_CLASSICAL"]),
    (["-o", "{tmp}/x.pb.gz", "--seed", "-1"], 2, ["--seed must be >= 0, got -1"]),
])
def test_make_net_user_errors(args, code, phrases, env, tmp_path):
    proc = lc0_rocm_cmd("make-net", "resnet-se", *[a.format(tmp=tmp_path) for a in args], env=env)
    one_line_error(proc, code, "lc0-rocm make-net", *phrases)
    assert not (tmp_path / "x.pb.gz").exists()


def test_make_net_out_of_memory_is_one_line(monkeypatch, tmp_path, capsys):
    """`--filters 100000` makes numpy raise "Unable to allocate 671 GiB"; the
    same numpy error, raised at once here (the real shape first fills ~1 GB
    of smaller layers), ends in one line."""
    from lc0_rocm import makenet
    makenet._load_presets()

    def huge(rng, **shape):
        return rng.standard_normal((100000, 100000, 3, 3))

    monkeypatch.setitem(makenet.PRESETS, "resnet-se", huge)
    assert makenet.main(["resnet-se", "-o", str(tmp_path / "x.pb.gz"), "--filters", "100000"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("lc0-rocm make-net: not enough memory for this shape")
    assert "671. GiB" in err and not (tmp_path / "x.pb.gz").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a disk that is always full)")
def test_make_net_full_disk(env):
    proc = lc0_rocm_cmd("make-net", "tiny-resnet", "-o", "/dev/full", env=env)
    one_line_error(proc, 1, "cannot write /dev/full", "No space left")
    assert os.path.exists("/dev/full")     # only a partial regular file is removed


def test_make_net_reports_progress_one_line_per_step(env, tmp_path):
    out = tmp_path / "n.pb.gz"
    proc = lc0_rocm_cmd("make-net", "tiny-resnet", "-o", out, env=env)
    assert proc.returncode == 0
    steps = [ln for ln in proc.stderr.splitlines() if ln.startswith("make-net tiny-resnet: ")]
    assert [s.split(": ")[1].split()[0] for s in steps] == ["drawing", "serializing", "writing"]
    assert f"wrote {out}" in proc.stdout and "random weights" in proc.stdout


def test_progress_is_a_bar_on_a_terminal():
    pytest.importorskip("tqdm")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    with Progress("make-net bt4", unit="B", stream=term) as p:
        p.phase("writing")
        p.set_total(1 << 20)
        p.advance(1 << 19)
    drawn = term.getvalue()
    assert "make-net bt4:" in drawn and "%|" in drawn and "1.00M" in drawn and "writing" in drawn
    plain = io.StringIO()
    with Progress("make-net bt4", unit="B", stream=plain) as p:
        p.phase("writing")
        p.advance(10)
    assert plain.getvalue() == "make-net bt4: writing\n"


def test_bench_says_what_it_runs_before_it_starts(env, maia_path):
    proc = lc0_rocm_cmd("bench", "-w", maia_path, "-b", "cpu", "--num-positions", "1",
                        "--movetime", "100", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    plan = next(i for i, ln in enumerate(lines) if ln.startswith("bench: "))
    first = next(i for i, ln in enumerate(lines) if ln.startswith("Position: 1/1"))
    assert plan < first
    assert lines[plan] == (f"bench: 1 position, 100 ms each, 1 search thread(s), backend cpu, "
                           f"net {maia_path}")


def test_bench_unknown_backend_is_not_blamed_on_the_net(env, maia_path):
    proc = lc0_rocm_cmd("bench", "-w", maia_path, "-b", "nosuch", env=env)
    last = one_line_error(proc, 1, "unknown backend 'nosuch'", "known: cpu")
    assert str(maia_path) not in last


def test_weights_by_fetched_name_from_another_folder(env, maia_path, tmp_path):
    cache = pathlib.Path(env["LC0ROCM_CACHE"])
    cache.mkdir()
    shutil.copyfile(maia_path, cache / "maia-1900.pb.gz")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = lc0_rocm_cmd("describenet", "--weights", "maia-1900", env=env, cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert "Minimal Lc0 version" in proc.stdout
    proc = lc0_rocm_cmd("bench", "--weights", "maia-1900.pb", env=env, cwd=elsewhere)
    one_line_error(proc, 1, "weights file not found: maia-1900.pb", str(cache), str(elsewhere))


@pytest.mark.parametrize("make_bad", ["file", "under_a_file"])
def test_fetch_net_unusable_cache_is_one_line(make_bad, env, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    env["LC0ROCM_CACHE"] = str(blocker if make_bad == "file" else blocker / "cache")
    proc = lc0_rocm_cmd("fetch-net", "maia-1900", env=env)
    last = one_line_error(proc, 1, "cannot put nets in", "LC0ROCM_CACHE")
    assert "File exists" not in last


def test_cache_lists_and_clears_only_our_files(env, maia_path, tmp_path):
    env.pop("LC0ROCM_BUILD_CACHE", None)    # builds under this test's cache, not the session's
    cache = pathlib.Path(env["LC0ROCM_CACHE"])
    (cache / "native" / "0123-gfx90a").mkdir(parents=True)
    (cache / "native" / "0123-gfx90a" / "liblc0rocm.so").write_bytes(b"x")
    (cache / "native" / "4567-gfx90a" / ".objects").mkdir(parents=True)    # an interrupted build's
    (cache / "native" / "4567-gfx90a" / ".objects" / "api.cpp.o").write_bytes(b"x")
    shutil.copyfile(maia_path, cache / "maia-1900.pb.gz")
    (cache / "notes.txt").write_text("mine")
    proc = lc0_rocm_cmd("cache", env=env)
    assert proc.returncode == 0 and "maia-1900.pb.gz" in proc.stdout and "0123-gfx90a" in proc.stdout
    assert "4567-gfx90a" in proc.stdout
    proc = lc0_rocm_cmd("cache", "--clear", env=env)
    assert proc.returncode == 0 and "removed 3 of 3" in proc.stdout
    assert sorted(p.name for p in cache.rglob("*")) == ["native", "notes.txt"]


def _interrupt_after(args, ready, env, stream="stdout", timeout=120):
    """Start `lc0-rocm ARGS`, wait for `ready` in its output, send SIGINT."""
    proc = subprocess.Popen([sys.executable, "-m", "lc0_rocm", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = {"stdout": [], "stderr": []}
    started = threading.Event()

    def read(name):
        for line in getattr(proc, name):
            seen[name].append(line)
            if name == stream and ready in line:
                started.set()

    readers = [threading.Thread(target=read, args=(n,), daemon=True) for n in seen]
    for r in readers:
        r.start()
    try:
        assert started.wait(timeout), f"never printed {ready!r}: {seen}"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    for r in readers:
        r.join(5)
    return proc.returncode, "".join(seen["stdout"]), "".join(seen["stderr"])


@pytest.mark.parametrize("command", ["bench", "backendbench", "make-net"])
def test_ctrl_c_stops_cleanly_with_130(command, env, maia_path, tmp_path):
    if command == "bench":
        args, ready, stream = ["bench", "-w", maia_path, "-b", "cpu", "--movetime", "20000"], \
            "Position: 1/", "stdout"
    elif command == "backendbench":
        args, ready, stream = ["backendbench", "-w", maia_path, "-b", "cpu", "--seconds", "30"], \
            "backendbench: net", "stdout"
    else:
        args, ready, stream = ["make-net", "t82", "-o", tmp_path / "t82.pb.gz"], "drawing", "stderr"
    code, out, err = _interrupt_after(args, ready, env, stream)
    assert code == 130, (out, err)
    assert "Traceback" not in err and err.strip().splitlines()[-1] == f"lc0-rocm {command}: interrupted"
    assert not (tmp_path / "t82.pb.gz").exists()


def test_make_net_interrupted_keeps_the_earlier_file(env, tmp_path, maia_path):
    """A failed or stopped write never leaves a partial net (which discovery
    would pick up) nor damages the file it was replacing."""
    target = tmp_path / "net.pb.gz"
    shutil.copyfile(maia_path, target)
    code, _, err = _interrupt_after(["make-net", "t82", "-o", target], "writing", env, "stderr")
    assert code == 130, err
    assert target.read_bytes() == maia_path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.pb.gz"]


@pytest.mark.parametrize("args", [["-h"], ["--version"], ["uci", "--help"], ["bench", "--help"]])
def test_output_into_a_closed_pipe_ends_quietly(tmp_path, args):
    """`lc0-rocm -h | head -1`: the reader is gone before the output is
    written; no BrokenPipeError traceback."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    read_end, write_end = os.pipe()
    os.close(read_end)                       # nobody will read
    try:
        proc = subprocess.run([sys.executable, "-m", "lc0_rocm", *args], stdout=write_end,
                              stderr=subprocess.PIPE, cwd=tmp_path, env=env, timeout=120)
    finally:
        os.close(write_end)
    assert b"Traceback" not in proc.stderr and b"BrokenPipe" not in proc.stderr, proc.stderr.decode()[-2000:]
