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


def row(net, precision, mode, batch, nps, engine="lc0-rocm", variant="default"):
    """One throughput row as gpu_bench keeps them."""
    return dict(engine=engine, net=net, precision=precision, variant=variant, mode=mode, batch=batch, nps=nps)


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
    rows = [row("maia-1900", "fp16", "packed", 1, 3000.0), row("maia-1900", "fp16", "packed", 16, 90000.0),
            row("maia-1900", "fp16", "lc0-way", 1, 6000.0, engine="lc0 master (reference)", variant="")]
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


def test_the_ceiling_is_the_matrix_rate_over_the_nets_flop_and_ours_a_fraction_of_it():
    gb = load_script()
    rows = [row("t82", "fp16", "packed", 512, 53_000.0), row("t82", "fp16", "lc0-way", 512, 52_000.0),
            row("t82", "fp16", "packed", 256, 99_999.0),  # not the target's batch
            row("t82", "fp32", "packed", 512, 9_000.0),  # not fp16
            row("bt4", "fp16", "packed", 256, 30_000.0),  # bt4 timed, but not at 512
            row("maia-1900", "fp16", "packed", 512, 1e6)]  # no ceiling for the classic net
    found = {c["net"]: c for c in gb.ceilings(rows, 750.0)}
    assert set(found) == {"t82", "bt4"}
    t82 = found["t82"]
    assert abs(t82["gflop_per_position"] - 8.6036) < 1e-3
    assert abs(t82["ceiling_nps"] - 750e12 / 8.60356608e9) < 1e-6
    assert abs(t82["target_nps"] - 0.6 * t82["ceiling_nps"]) < 1e-6
    assert set(t82["fraction"]) == {"packed", "lc0-way"}
    assert abs(t82["fraction"]["packed"] - 53_000 / t82["ceiling_nps"]) < 1e-12
    assert found["bt4"]["fraction"] == {}
    md = gb.ceiling_markdown(list(found.values()))
    assert "750.0 TFLOP/s" in md
    assert f"| t82 | 8.60 | {t82['ceiling_nps']:,.0f} | {t82['target_nps']:,.0f} | packed 60.8%, lc0-way 59.7% |" in md
    assert "| bt4 | 15.49 |" in md and "not timed" in md
    assert gb.ceiling_markdown([]) == ""


def test_the_matrix_rate_is_read_from_the_program_or_is_none(monkeypatch):
    gb = load_script()
    import bench_program
    calls = []

    def answer(status, output):
        def read(name, args, with_blas=False):
            calls.append((name, args, with_blas))
            return status, output
        return read
    monkeypatch.setattr(bench_program, "build_and_read",
                        answer(0, "fp16 matrix rate 747.5 TFLOP/s (8192^3, 20 products after 3, from rest)\n"))
    assert gb.matrix_rate_tflops() == 747.5
    assert calls == [("matrix_rate_bench", ["8192", "20", "3"], True)]
    monkeypatch.setattr(bench_program, "build_and_read", answer(2, ""))  # no sm_90 GPU
    assert gb.matrix_rate_tflops() is None
    monkeypatch.setattr(bench_program, "build_and_read", answer(1, "cuBLAS status 13"))
    assert gb.matrix_rate_tflops() is None
