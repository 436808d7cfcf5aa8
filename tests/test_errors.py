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


def test_a_callers_bad_value_or_a_closed_network_is_an_lc0rocm_error():
    """`except lc0_rocm.Lc0RocmError` catches what the module doc says it
    does: a bad option, limit, position or setting (InvalidArgumentError,
    still a ValueError) and a network used after close() (ClosedError,
    still a RuntimeError)."""
    import chess
    from lc0_rocm.errors import ClosedError, InvalidArgumentError
    net = lc0_rocm.load_network(None, backend="random")
    engine = lc0_rocm.Engine(net)
    calls = {
        "a position with no kings": lambda: net.evaluate(chess.Board(None)),
        "an unknown option": lambda: lc0_rocm.Engine(net, NoSuchOption=1),
        "an option out of range": lambda: engine.set_option("MultiPV", 0),
        "no nodes": lambda: engine.search(chess.Board(), nodes=0),
        "a chunk of no boards": lambda: net.evaluate_batch([chess.Board()], chunk=0),
        "an unknown input format": lambda: lc0_rocm.encode(chess.Board(), 99),
        "an unknown analysis kind": lambda: list(lc0_rocm.analyse([chess.Board()], network=net, nodes=5,
                                                                   batching="sometimes")),
    }
    for what, call in calls.items():
        try:
            call()
        except Lc0RocmError as e:
            assert isinstance(e, InvalidArgumentError) and isinstance(e, ValueError), what
        else:
            raise AssertionError(f"{what}: no error")
    net.close()
    try:
        net.evaluate(chess.Board())
    except Lc0RocmError as e:
        assert isinstance(e, ClosedError) and isinstance(e, RuntimeError) and "is closed" in str(e)
    else:
        raise AssertionError("a closed network evaluated")


def test_loaders_name_a_value_of_the_wrong_type():
    import pytest
    from lc0_rocm.weights import load_weights
    for call, words in ((lambda: lc0_rocm.load_network(123), "path or name, got int"),
                        (lambda: lc0_rocm.load_network(b"x.pb.gz"), "path or name, got bytes"),
                        (lambda: lc0_rocm.load_network(None, backend="random", backend_opts=5),
                         "backend_opts must be"),
                        (lambda: load_weights(None), "path, got NoneType")):
        with pytest.raises(TypeError, match=words):
            call()
