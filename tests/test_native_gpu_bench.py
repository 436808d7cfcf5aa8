"""Host-side parts of scripts/gpu_bench.py (no GPU): lc0 output parsing, the
reference data, the markdown table, the net files (gpu_check.net_paths)."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_script(name="gpu_bench"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parse_lc0_backendbench_output():
    gb = load_script()
    text = ("Loading weights file from: maia.pb.gz\n"
            "Benchmark batch size 2 with inference average time 5.33755ms - throughput 374.704 nps.\n"
            "Benchmark batch size 64 with inference average time 0.25ms - throughput 256000 nps.\n")
    assert gb.parse_lc0_output(text) == {2: 374.704, 64: 256000.0}
    assert gb.parse_lc0_output("error: no such backend") == {}


def test_lc0_command_times_one_batch_size():
    gb = load_script()
    cmd = gb.lc0_command("lc0", "cuda-fp16", pathlib.Path("n.pb.gz"), 64, 60)
    assert cmd[:2] == ["lc0", "backendbench"]
    assert {"--start-batch-size=64", "--max-batch-size=64", "--batches=60", "--backend=cuda-fp16"} <= set(cmd)


def test_reference_rows_are_issue_9s_lc0_master_figures():
    gb = load_script()
    rows = gb.reference_rows()
    got = {(r["net"], r["precision"], r["batch"]): r["nps"] for r in rows}
    assert len(rows) == 20 and all(r["engine"] == "lc0 master (reference)" for r in rows)
    assert got[("maia-1900", "fp16", 256)] == 694686
    assert got[("t82", "fp32", 1)] == 329


def test_markdown_table_has_ratios_against_lc0():
    gb = load_script()
    rows = [dict(engine="lc0-rocm", net="maia-1900", precision="fp16", variant="default", mode="packed",
                 batch=1, nps=3000.0),
            dict(engine="lc0-rocm", net="maia-1900", precision="fp16", variant="default", mode="packed",
                 batch=16, nps=90000.0),
            dict(engine="lc0 master (reference)", net="maia-1900", precision="fp16", variant="",
                 mode="lc0-way", batch=1, nps=6000.0)]
    md = gb.markdown(rows, [1, 16])
    assert "### maia-1900 fp16" in md
    assert "| lc0-rocm default packed | 3,000 | 90,000 |" in md
    assert "| lc0-rocm default packed / lc0 master (reference) | 0.50 |  |" in md


def test_net_paths_take_given_files_and_draw_the_others(tmp_path, monkeypatch):
    gpu_check = load_script("gpu_check")
    drawn = []
    monkeypatch.setattr(gpu_check, "make_net", lambda name, path, seed: drawn.append(name) or path)
    given = tmp_path / "given"
    given.mkdir()
    (given / "t82.pb.gz").write_bytes(b"t82")
    paths = gpu_check.net_paths(tmp_path, ["t82", "bt4"], given)
    assert paths["t82"] == given / "t82.pb.gz"
    assert paths["bt4"] == tmp_path / "bt4.pb.gz" and drawn == ["bt4"]
    assert gpu_check.net_paths(tmp_path, ["t82"])["t82"] == tmp_path / "t82.pb.gz"
