"""One exception root: every error class of the package derives from
lc0_rocm.Lc0RocmError and keeps its built-in base."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import lc0_rocm
from lc0_rocm.errors import Lc0RocmError


def package_error_classes() -> dict[str, type]:
    found = {}
    for module in pkgutil.walk_packages(lc0_rocm.__path__, "lc0_rocm."):
        if module.name.startswith("lc0_rocm._proto") or module.name == "lc0_rocm.__main__":
            continue
        mod = importlib.import_module(module.name)
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == mod.__name__):
                found[f"{mod.__name__}.{name}"] = obj
    return found


def test_every_error_class_has_the_root():
    classes = package_error_classes()
    assert len(classes) >= 16, sorted(classes)       # the root and today's 15
    strays = [name for name, cls in classes.items() if not issubclass(cls, Lc0RocmError)]
    assert not strays, strays


def test_root_is_exported_and_built_in_bases_stay():
    assert lc0_rocm.Lc0RocmError is Lc0RocmError and "Lc0RocmError" in dir(lc0_rocm)
    from lc0_rocm.backends.options import BackendOptionsError
    from lc0_rocm.netfiles import FetchError, NetNotFoundError
    from lc0_rocm.native_core import NativeCoreError
    from lc0_rocm.native_rules import RulesError
    from lc0_rocm.outputs import OutputPathError
    assert issubclass(NetNotFoundError, FileNotFoundError) and issubclass(FetchError, OSError)
    assert issubclass(OutputPathError, ValueError) and issubclass(RulesError, ValueError)
    assert issubclass(BackendOptionsError, ValueError) and issubclass(NativeCoreError, RuntimeError)
    try:
        raise NetNotFoundError("no net")
    except FileNotFoundError as e:         # old handlers still catch it
        assert isinstance(e, Lc0RocmError) and str(e) == "no net"
