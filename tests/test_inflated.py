"""Inflated copies of big gzipped nets (weights.inflated): a second load reads
the copy instead of inflating, and any mismatch falls back to inflating."""
from __future__ import annotations

import gzip
import os

import pytest

from lc0_rocm import netfiles
from lc0_rocm.weights import decode, inflated, load_weights


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(inflated.KEEP_ENV, "2")
    monkeypatch.setattr(inflated, "MIN_BYTES", 0)      # maia (~1 MB) stands in for a big net
    return tmp_path / "cache" / "inflated"


def copies(folder):
    return sorted(folder.glob("*.pb")) if folder.exists() else []


def no_inflating(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("inflated again")
    monkeypatch.setattr(decode, "gunzip", refuse)


def damage(copy, how="a flipped bit"):
    """Spoil a copy: one bit flipped in its middle, or all of it garbage."""
    data = bytearray(copy.read_bytes())
    if how == "garbage":
        data = bytearray(b"\xff" * len(data))
    else:
        data[len(data) // 2] ^= 1
    copy.write_bytes(bytes(data))


def count_inflating(monkeypatch):
    """A list that gets an entry for each gunzip."""
    calls = []
    real = decode.gunzip
    monkeypatch.setattr(decode, "gunzip", lambda *a: calls.append(1) or real(*a))
    return calls


def test_second_load_reads_the_copy(cache, maia_path, tmp_path, monkeypatch):
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    first = decode.read_net_bytes(str(net))
    assert first == gzip.decompress(net.read_bytes())
    assert len(copies(cache)) == 1
    no_inflating(monkeypatch)
    assert decode.read_net_bytes(str(net)) == first
    load_weights(net)                                     # the whole load through the copy
    assert any(p == copies(cache)[0] for p in netfiles.cached_files()[0])


def test_damaged_copy_is_inflated_again(cache, maia_path, tmp_path, monkeypatch):
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    first = decode.read_net_bytes(str(net))
    (copy,) = copies(cache)
    damage(copy)
    calls = count_inflating(monkeypatch)
    assert decode.read_net_bytes(str(net)) == first
    assert calls and copy.read_bytes() == first           # rewritten whole


def test_load_net_parses_a_good_copy_while_checking_it(cache, maia_path, tmp_path, monkeypatch):
    """decode.load_net (what load_weights reads with) checks the copy beside
    its parse and keeps the parse when the check passes: no inflating."""
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    expected = decode.parse_net(decode.read_net_bytes(str(net)), str(net))   # makes the copy
    no_inflating(monkeypatch)
    assert decode.load_net(str(net)) == expected


@pytest.mark.parametrize("how", ["a flipped bit", "garbage"])
def test_load_net_reads_the_file_when_the_copy_fails_its_check(cache, maia_path, tmp_path, monkeypatch, how):
    """A copy that parses but fails the CRC (a flipped bit in a weight), or
    one that does not even parse, is not used: the net comes from the file,
    whole, and the copy is written again; no error reaches the caller."""
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    first = decode.read_net_bytes(str(net))
    expected = decode.parse_net(first, str(net))
    (copy,) = copies(cache)
    damage(copy, how)
    calls = count_inflating(monkeypatch)
    assert decode.load_net(str(net)) == expected
    assert calls and copy.read_bytes() == first


def test_changed_file_is_a_new_entry_and_old_ones_are_pruned(cache, maia_path, tmp_path):
    net = tmp_path / "net.pb.gz"
    raw = gzip.decompress(maia_path.read_bytes())
    for level in (1, 6, 9):                               # three different files at one path
        net.write_bytes(gzip.compress(raw + bytes(level), compresslevel=level))
        os.utime(net, ns=(level * 10**18, level * 10**18))
        assert decode.read_net_bytes(str(net)) == raw + bytes(level)
    assert len(copies(cache)) == 2                        # KEEP_ENV = 2: the oldest went
    assert decode.read_net_bytes(str(net)) == raw + bytes(9)


def test_multi_member_files_are_not_kept(cache, maia_path, tmp_path):
    raw = gzip.decompress(maia_path.read_bytes())
    net = tmp_path / "two.pb.gz"
    net.write_bytes(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]))
    assert decode.read_net_bytes(str(net)) == raw
    assert copies(cache) == []


def test_nothing_kept_when_disabled_or_small(cache, maia_path, tmp_path, monkeypatch):
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    monkeypatch.setenv(inflated.KEEP_ENV, "0")
    decode.read_net_bytes(str(net))
    assert copies(cache) == []
    monkeypatch.setenv(inflated.KEEP_ENV, "4")
    monkeypatch.setattr(inflated, "MIN_BYTES", 1 << 30)
    decode.read_net_bytes(str(net))
    assert copies(cache) == []


def test_unwritable_cache_still_loads(monkeypatch, maia_path, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LC0ROCM_CACHE", str(blocker))     # inflated/ cannot be made under a file
    monkeypatch.setenv(inflated.KEEP_ENV, "4")
    monkeypatch.setattr(inflated, "MIN_BYTES", 0)
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    assert decode.read_net_bytes(str(net)) == gzip.decompress(net.read_bytes())
    assert not list(tmp_path.glob("**/.part-*"))


def test_plain_pb_and_damaged_gzip_unchanged(cache, maia_path, tmp_path):
    raw = gzip.decompress(maia_path.read_bytes())
    plain = tmp_path / "net.pb"
    plain.write_bytes(raw)
    assert decode.read_net_bytes(str(plain)) == raw
    cut = tmp_path / "cut.pb.gz"
    cut.write_bytes(maia_path.read_bytes()[:-100])
    with pytest.raises(decode.WeightsError, match="damaged or truncated"):
        decode.read_net_bytes(str(cut))
    assert copies(cache) == []


def test_stale_partial_writes_are_removed(cache, maia_path, tmp_path):
    cache.mkdir(parents=True)
    stale, fresh = cache / ".part-killed", cache / ".part-writing"
    for part in (stale, fresh):
        part.write_bytes(b"half a net")
    os.utime(stale, (1, 1))
    net = tmp_path / "net.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    decode.read_net_bytes(str(net))                       # a write prunes
    assert not stale.exists() and fresh.exists() and len(copies(cache)) == 1
