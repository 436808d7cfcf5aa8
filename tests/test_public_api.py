"""The public API is discoverable (issue 10.11): dir() and help() list it,
the documented objects carry docstrings with units, and a user's script
type-checks under `mypy --strict` against the package (py.typed)."""
from __future__ import annotations

import pathlib
import pydoc
import shutil
import subprocess
import sys

import pytest

import lc0_rocm

ROOT = pathlib.Path(__file__).resolve().parent.parent
USER_SCRIPT = ROOT / "tests" / "data" / "typed_user_script.py"


def test_dir_lists_the_public_api():
    names = dir(lc0_rocm)
    for name in ("load_network", "Network", "Evaluation", "Engine", "SearchResult", "NetSpec",
                 "load_weights", "NetNotFoundError", "__version__", "analyse", "AnalysisRecord"):
        assert name in names
    assert "__getattr__" not in names and "importlib" not in names


def test_help_shows_the_api_and_units():
    text = pydoc.render_doc(lc0_rocm, renderer=pydoc.plaintext)
    assert "load_network(" in text and "class Engine" in text and "class Network" in text
    assert "seconds" in text


@pytest.mark.parametrize("obj", [
    lambda: lc0_rocm.Network.evaluate, lambda: lc0_rocm.Network.evaluate_batch,
    lambda: lc0_rocm.Network.close, lambda: lc0_rocm.SearchResult, lambda: lc0_rocm.NetSpec,
    lambda: lc0_rocm.Engine.search, lambda: lc0_rocm.load_network, lambda: lc0_rocm.Evaluation,
    lambda: lc0_rocm.analyse, lambda: lc0_rocm.AnalysisRecord])
def test_documented(obj):
    doc = obj().__doc__ or ""
    assert len(doc) > 60 and not doc.startswith(obj().__name__ + "(")   # not the dataclass default


def test_search_documents_seconds():
    assert "seconds" in lc0_rocm.Engine.search.__doc__
    assert "seconds" in lc0_rocm.SearchResult.__doc__


def test_package_ships_py_typed():
    assert (ROOT / "lc0_rocm" / "py.typed").is_file()


def test_mypy_strict_on_a_user_script(tmp_path):
    """One mypy run over two copies of the script: the user's passes, and a
    copy with a wrong type is reported (the check has teeth)."""
    pytest.importorskip("mypy", reason="mypy is not installed (the dev extra)")
    shutil.copyfile(USER_SCRIPT, tmp_path / "user.py")
    (tmp_path / "wrong.py").write_text(USER_SCRIPT.read_text().replace("q: float = ev.q", "q: str = ev.q"))
    # --follow-imports=silent: as for an installed package, mypy reads the
    # package's types but reports only the scripts.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--no-incremental", "--cache-dir", "/dev/null", "user.py", "wrong.py"],
                          capture_output=True, text=True, timeout=600,
                          env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, proc.stdout + proc.stderr
    assert errors[0].startswith("wrong.py:") and "Incompatible types in assignment" in errors[0]
