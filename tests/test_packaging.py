"""What pip builds from this checkout (issue 10.13): the MIT license file in
both the wheel and the sdist, the SPDX license expression, py.typed, and an
sdist whose tests have what they need (conftest, fakes, oracle, data)."""
from __future__ import annotations

import pathlib
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("setuptools", reason="building needs setuptools")
    out = tmp_path_factory.mktemp("dist")
    code = ("import sys, setuptools.build_meta as b\n"
            "out = sys.argv[1]  # build_sdist rewrites sys.argv\n"
            "s = b.build_sdist(out); w = b.build_wheel(out)\n"
            "print('BUILT', s, w)\n")
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code, str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sdist, wheel = proc.stdout.rsplit("BUILT", 1)[1].split()
    return out / sdist, out / wheel, proc.stderr


def test_no_license_deprecation_warning(built):
    _, _, log = built
    assert not [line for line in log.splitlines() if "license" in line.lower() and "deprecat" in line.lower()]


def test_wheel_has_license_and_py_typed(built):
    _, wheel, _ = built
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "lc0_rocm/py.typed" in names
    assert "License-Expression: MIT" in metadata
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)


def test_sdist_carries_what_its_tests_need(built):
    sdist, _, _ = built
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    needed = {"LICENSE", "README.md", "pyproject.toml", "tests/conftest.py", "tests/oracle.py",
              "tests/search_fakes.py", "tests/uci_fakes.py", "tests/data/suite.epd",
              "native/include/lc0rocm.h", "proto/net.proto", "scripts/gen_proto.py",
              "uci/lc0-rocm.sh"}
    assert needed <= names, sorted(needed - names)
    test_files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py")}
    assert test_files <= names, sorted(test_files - names)
    assert not any("__pycache__" in n for n in names)


def test_one_prefix_for_environment_variables():
    """LC0ROCM_* everywhere; the former LC0_ROCM_* names appear only where
    they are still read for old set-ups."""
    import re
    pattern = re.compile(r"\bLC0_ROCM_[A-Z_]+")
    files = list((ROOT / "lc0_rocm").rglob("*.py")) + [ROOT / "README.md"] + list((ROOT / "uci").iterdir())
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            if pattern.search(line):   # only beside the new name, or said to be the former one
                assert "LC0ROCM_" in line or "former" in line, f"{path.name}: {line.strip()}"
