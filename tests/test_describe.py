"""describe(): the same lines as `lc0 describenet` (lc0 v0.32.1 on PATH)."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from lc0_rocm.describe import count_parameters, describe, main
from lc0_rocm.weights import load_weights

LINE = re.compile(r"^\s*([A-Za-z0-9 ]+): (.*)$")
OUR_EXTRAS = {"Parameters", "Policy heads", "Value heads"}




def fields(text: str) -> list[tuple[str, str]]:
    """(label, value) lines in order, section titles as ('#', title)."""
    out, lines = [], text.splitlines()
    for i, raw in enumerate(lines):
        m = LINE.match(raw)
        if m:
            out.append((m.group(1).strip(), m.group(2).strip()))
        elif i + 1 < len(lines) and set(lines[i + 1]) == {"~"}:
            out.append(("#", raw.strip()))
    return out


def lc0_describe(path) -> str:
    if shutil.which("lc0") is None:
        pytest.skip("the lc0 binary is not on PATH")
    done = subprocess.run(["lc0", "describenet", "-w", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_maia_matches_lc0(maia_path):
    ours = fields(describe(load_weights(maia_path)))
    theirs = fields(lc0_describe(maia_path))
    assert [f for f in ours if f[0] not in OUR_EXTRAS] == theirs
    assert ("Filters", "64") in ours and ("SE blocks", "6") in ours
    assert ("Learning rate", "0.0001") in ours


@pytest.mark.parametrize("preset", ["tiny-resnet", "tiny-resnet-classical",
                                    "tiny-resnet-attnpolicy", "tiny-attn", "tiny-bt"])
def test_presets_match_lc0(make_test_net, preset):
    path = make_test_net(preset)
    w = load_weights(path)
    ours = [f for f in fields(describe(w)) if f[0] not in OUR_EXTRAS]
    theirs = fields(lc0_describe(path))
    if w.net.policy_heads is not None:
        # lc0 reads the top-level policy fields, empty in multi-head files; we
        # read the vanilla head.
        theirs = [f for f in theirs if f[0] != "Policy Dmodel"]
        ours = [f for f in ours if f[0] != "Policy Dmodel"]
    assert ours == theirs


def test_parameter_count(maia_path):
    w = load_weights(maia_path)
    net = w.net
    by_hand = (net.input.weights.size + 5 * 64  # weights, biases (zeros) and 4 batch-norm
               + sum(b.conv1.weights.size + b.conv2.weights.size + 10 * 64
                     + b.se.w1.size + b.se.b1.size + b.se.w2.size + b.se.b2.size
                     for b in net.residual)
               + net.policy1.weights.size + 5 * 64 + net.policy.weights.size + 80
               + net.value.weights.size + 5 * 32
               + net.ip1_val_w.size + 128 + net.ip2_val_w.size + 3)
    assert count_parameters(net) == by_hand
    assert f"Parameters: {by_hand:,}" in describe(w)


def test_main_prints_and_fails_clearly(maia_path, tmp_path, capsys):
    assert main([str(maia_path)]) == 0
    assert "NETWORK_SE_WITH_HEADFORMAT" in capsys.readouterr().out
    assert main(["--weights", str(maia_path)]) == 0
    assert "Blocks: 6" in capsys.readouterr().out
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00broken")
    assert main(["-w", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "lc0-rocm describenet:" in err and "gzip" in err and "Traceback" not in err


def test_cli_dispatch(maia_path, capsys):
    from lc0_rocm.cli import main as cli_main
    assert cli_main(["describenet", str(maia_path)]) == 0
    assert "Minimal Lc0 version: v0.21.0" in capsys.readouterr().out


def test_main_without_a_path_discovers(maia_path, monkeypatch, capsys):
    from lc0_rocm import netfiles
    monkeypatch.setattr(netfiles, "resolve_weights", lambda value: maia_path)
    assert main([]) == 0
    assert "Filters: 64" in capsys.readouterr().out

    def nothing(value):
        raise netfiles.NetNotFoundError("no network file found (looked in /x)")
    monkeypatch.setattr(netfiles, "resolve_weights", nothing)
    assert main([]) == 1
    assert "no network file found" in capsys.readouterr().err
