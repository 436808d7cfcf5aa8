"""`lc0-rocm analyse --ray ADDRESS` (lc0_rocm/analysis/ray_runner.py) on a
two-node Ray cluster started on this machine: the same bytes as the local
run. Skipped where Ray is not installed (`pip install 'lc0-rocm[ray]'`)."""
from __future__ import annotations

import os

import pytest

from analysis_data import EPD_LINES, random_games, write_lines, write_pgn
from lc0_rocm.analysis import cli

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'lc0-rocm[ray]')")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


def test_ray_cluster_gives_the_local_bytes(cluster, tmp_path, capsys):
    pgn = write_pgn(tmp_path / "g.pgn", random_games(2, seed=21, max_plies=20))
    epd = write_lines(tmp_path / "s.epd", EPD_LINES)
    common = [str(pgn), str(epd), "-b", "random", "--nodes", "20", "--shard-size", "10"]
    assert cli.main([*common, "-o", str(tmp_path / "local.jsonl")]) == 0
    assert cli.main([*common, "-o", str(tmp_path / "ray.jsonl"), "--ray", cluster.address, "--workers", "2"]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes(), err
    assert (tmp_path / "ray.jsonl.errors").read_bytes() == (tmp_path / "local.jsonl.errors").read_bytes()
    assert "2 Ray actor(s) on 2 node(s)" in err
