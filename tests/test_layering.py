"""How the package's modules may import each other (docs/ARCHITECTURE.md):
nothing private crosses a module boundary, and only the UCI engine reads
its own uci_* parts (a command shares code through neutral modules)."""
from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "lc0_rocm"


def imports():
    """(importing module's path, imported module, imported names) for every
    lc0_rocm import in the package, function-level ones included."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_proto" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lc0_rocm"):
                yield path, node.module, [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("lc0_rocm"):
                        yield path, alias.name, []


def test_no_private_name_is_imported_from_another_module():
    strays = [f"{path.relative_to(PACKAGE)}: {module}.{name}" for path, module, names in imports()
              for name in names if name.startswith("_") and not name.startswith("__")]
    assert not strays, strays


def test_only_the_uci_engine_imports_uci_modules():
    strays = []
    for path, module, names in imports():
        targets = [module] + [f"{module}.{n}" for n in names if module == "lc0_rocm"]
        if any(t.split(".")[-1].startswith("uci_") for t in targets) and path.name != "uci.py" \
                and not path.name.startswith("uci_"):
            strays.append(f"{path.relative_to(PACKAGE)} imports {module} {names}")
    assert not strays, strays
