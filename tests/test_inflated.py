"""Kept copies of big gzipped nets (weights.inflated): a second load reads
the copy (the message without its big layers' params, and those params)
instead of inflating, gives the file's weights bit for bit, and any
mismatch falls back to inflating."""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from lc0_rocm import netfiles
from lc0_rocm.weights import decode, inflated, load_weights
from lc0_rocm.weights.tree import Linear16Layer, Node


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(inflated.KEEP_ENV, "2")
    monkeypatch.setattr(inflated, "MIN_BYTES", 0)      # maia (~1 MB) stands in for a big net
    return tmp_path / "cache" / "inflated"


@pytest.fixture
def net(maia_path, tmp_path):
    path = tmp_path / "net.pb.gz"
    path.write_bytes(maia_path.read_bytes())
    return path


def copies(folder):
    return sorted(folder.glob("*" + inflated.SUFFIX)) if folder.exists() else []


def no_inflating(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("inflated again")
    monkeypatch.setattr(decode, "gunzip", refuse)


def count_inflating(monkeypatch):
    """A list that gets an entry for each gunzip."""
    calls = []
    real = decode.gunzip
    monkeypatch.setattr(decode, "gunzip", lambda *a: calls.append(1) or real(*a))
    return calls


def damage(copy, how="a flipped bit"):
    """Spoil a copy: one bit flipped in its last byte (a weight), all of it
    garbage, or cut short (its read spans several chunks, summed as it goes)."""
    data = bytearray(copy.read_bytes())
    if how == "garbage":
        data = bytearray(b"\xff" * len(data))
    elif how == "cut short":
        data = data[:len(data) * 2 // 3]
    else:
        data[-1] ^= 1
    copy.write_bytes(bytes(data))


def leaves(node, path="weights"):
    if isinstance(node, Node):
        for name, value in vars(node).items():
            yield from leaves(value, f"{path}.{name}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, f"{path}[{i}]")
    else:
        yield path, node


def assert_same_weights(got, expected):
    """Every field and array of two Weights equal, bit for bit, kept LINEAR16 layers included."""
    assert got.format == expected.format and got.license == expected.license
    a, b = dict(leaves(got.net)), dict(leaves(expected.net))
    assert a.keys() == b.keys()
    for name, want in b.items():
        have = a[name]
        if isinstance(want, Linear16Layer):
            assert isinstance(have, Linear16Layer) and (have.lo, have.hi) == (want.lo, want.hi), name
            assert np.array_equal(have.steps, want.steps), name
        elif isinstance(want, np.ndarray):
            assert have.dtype == want.dtype and np.array_equal(have, want), name
        else:
            assert have == want, name


def from_the_file(path, monkeypatch, **kwargs):
    monkeypatch.setenv(inflated.KEEP_ENV, "0")
    try:
        return load_weights(path, **kwargs)
    finally:
        monkeypatch.setenv(inflated.KEEP_ENV, "2")


def test_second_load_reads_the_copy(cache, net, monkeypatch):
    monkeypatch.setattr(inflated, "READ_CHUNK", 100_000)      # read and summed in chunks
    expected = from_the_file(net, monkeypatch)
    assert copies(cache) == []
    assert_same_weights(load_weights(net), expected)     # inflates, keeps a copy
    assert len(copies(cache)) == 1
    no_inflating(monkeypatch)
    assert_same_weights(load_weights(net), expected)     # the whole load through the copy
    assert any(p == copies(cache)[0] for p in netfiles.cached_files()[0])


@pytest.mark.parametrize("kind", ["tiny-attn", "tiny-bt", "tiny-resnet"])
@pytest.mark.parametrize("keep_linear16", [True, False])
def test_the_copy_gives_the_files_weights_bit_for_bit(cache, kind, keep_linear16, make_test_net, tmp_path,
                                                      monkeypatch):
    """Every layer taken out of the message (MIN_PARAMS 0): the arrays from
    the copy are the file's, decoded or kept in LINEAR16."""
    monkeypatch.setattr(inflated, "MIN_PARAMS", 0)
    path = tmp_path / f"{kind}.pb.gz"
    path.write_bytes(gzip.compress(gzip.decompress(make_test_net(kind).read_bytes())))
    expected = from_the_file(path, monkeypatch, keep_linear16=keep_linear16)
    first = load_weights(path, keep_linear16=keep_linear16)
    no_inflating(monkeypatch)
    again = load_weights(path, keep_linear16=keep_linear16)
    assert_same_weights(first, expected)
    assert_same_weights(again, expected)
    net, params = decode.load_net(str(path))
    assert params and all(not layer.params for name, layer in decode.layer_messages(net.weights) if name in params)
    assert all(view.readonly for view in params.values())           # as immutable as bytes
    assert not np.frombuffer(next(iter(params.values())), np.uint8).flags.writeable


def test_only_big_layers_are_taken_out(cache, net, monkeypatch):
    monkeypatch.setattr(inflated, "MIN_PARAMS", 4096)
    decode.load_net(str(net))
    msg, params = decode.load_net(str(net))
    sizes = {name: len(layer.params) for name, layer in decode.layer_messages(msg.weights)}
    assert params and all(len(raw) >= 4096 and sizes[name] == 0 for name, raw in params.items())
    assert any(0 < size < 4096 for size in sizes.values())          # small ones stay in the message


@pytest.mark.parametrize("how", ["a flipped bit", "garbage", "cut short"])
def test_a_damaged_copy_is_not_used_and_is_written_again(cache, net, monkeypatch, how):
    """A copy that fails its CRC (a flipped bit in a weight), is garbage or
    was cut short: the net comes from the file, whole, and the copy is
    written again; no error reaches the caller."""
    monkeypatch.setattr(inflated, "READ_CHUNK", 100_000)      # read and summed in many chunks
    expected = from_the_file(net, monkeypatch)
    load_weights(net)
    (copy,) = copies(cache)
    good = copy.read_bytes()
    damage(copy, how)
    calls = count_inflating(monkeypatch)
    assert_same_weights(load_weights(net), expected)
    assert calls and copy.read_bytes() == good


def test_a_copy_naming_a_layer_the_message_lacks_is_not_used(cache, net, monkeypatch):
    load_weights(net)
    (copy,) = copies(cache)
    message, params = decode.load_net(str(net))
    bogus = [*params.items(), ("weights.no_such_layer", b"\x00\x00")]
    copy.write_bytes(b"".join(bytes(p) for p in inflated._packed(message.SerializeToString(), bogus)))
    calls = count_inflating(monkeypatch)
    assert_same_weights(load_weights(net), from_the_file(net, monkeypatch))
    assert calls


def test_changed_file_is_a_new_entry_and_old_ones_are_pruned(cache, maia_path, tmp_path, monkeypatch):
    net = tmp_path / "net.pb.gz"
    raw = gzip.decompress(maia_path.read_bytes())
    for level in (1, 6, 9):                               # three different files at one path
        net.write_bytes(gzip.compress(raw, compresslevel=level))
        os.utime(net, ns=(level * 10**18, level * 10**18))
        decode.load_net(str(net))
    assert len(copies(cache)) == 2                        # KEEP_ENV = 2: the oldest went
    no_inflating(monkeypatch)
    decode.load_net(str(net))


def test_multi_member_files_are_not_kept(cache, maia_path, tmp_path):
    raw = gzip.decompress(maia_path.read_bytes())
    net = tmp_path / "two.pb.gz"
    net.write_bytes(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]))
    assert decode.read_net_bytes(str(net)) == raw
    load_weights(net)
    assert copies(cache) == []


def test_nothing_kept_when_disabled_or_small(cache, net, monkeypatch):
    monkeypatch.setenv(inflated.KEEP_ENV, "0")
    decode.load_net(str(net))
    assert copies(cache) == []
    monkeypatch.setenv(inflated.KEEP_ENV, "4")
    monkeypatch.setattr(inflated, "MIN_BYTES", 1 << 30)
    decode.load_net(str(net))
    assert copies(cache) == []


def test_unwritable_cache_still_loads(monkeypatch, net, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LC0ROCM_CACHE", str(blocker))     # inflated/ cannot be made under a file
    monkeypatch.setenv(inflated.KEEP_ENV, "4")
    monkeypatch.setattr(inflated, "MIN_BYTES", 0)
    assert decode.read_net_bytes(str(net)) == gzip.decompress(net.read_bytes())
    assert load_weights(net).net is not None
    assert not list(tmp_path.glob("**/.part-*"))


def test_plain_pb_and_damaged_gzip_unchanged(cache, maia_path, tmp_path):
    raw = gzip.decompress(maia_path.read_bytes())
    plain = tmp_path / "net.pb"
    plain.write_bytes(raw)
    assert decode.read_net_bytes(str(plain)) == raw
    assert load_weights(plain).net is not None
    cut = tmp_path / "cut.pb.gz"
    cut.write_bytes(maia_path.read_bytes()[:-100])
    with pytest.raises(decode.WeightsError, match="damaged or truncated"):
        load_weights(cut)
    assert copies(cache) == []


def test_stale_partial_writes_and_old_whole_copies_are_removed(cache, net):
    cache.mkdir(parents=True)
    stale, fresh, old = cache / ".part-killed", cache / ".part-writing", cache / "0123abcd.pb"
    for part in (stale, fresh, old):
        part.write_bytes(b"half a net")
    os.utime(stale, (1, 1))
    decode.load_net(str(net))                             # a write prunes
    assert not stale.exists() and not old.exists() and fresh.exists() and len(copies(cache)) == 1
