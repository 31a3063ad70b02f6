"""docs/architecture.md section 1: each layer of ember imports only from layers below it.

An ``ast`` walk over every module under ``ember/`` (imports at module level and inside
functions alike), so the check needs no import of ember. The same rule is declared as an
import-linter contract in ``pyproject.toml`` (``make lint``).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ember"

# Top-level package -> layer. Packages sharing a layer are siblings.
LAYERS = {
    "errors": 0, "config": 0, "_internal": 0,
    "core": 1,
    "memory": 2,
    "dispatch": 3,
    "tensor": 4,
    "autograd": 5,
    "ops": 6,
    "backends": 7,
    "nn": 8, "optim": 8, "utils": 8, "serialization": 8, "testing": 8, "amp": 8,
    "profiler": 8, "func": 8,
    "compiler": 9, "distributed": 9,
}
# Siblings in these layers never import one another (L0 siblings may).
INDEPENDENT_LAYERS = {8, 9}
# The torch-like namespace and the applications on top (demo, examples): these may import
# anything, and no layer may import them.
NAMESPACE = {"__init__", "library", "linalg", "random", "demo", "examples", "accelerator", "cuda",
             "mps", "_dynamo", "_logging", "special",
             "signal", "masked", "distributions", "fft"}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Absolute names of the ember modules an import statement brings in."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    if base == "ember":  # ``from ember import ops`` names submodules
        return [f"ember.{a.name}" for a in node.names]
    return [base]


def _top(name: str) -> str | None:
    """The top-level package of an ``ember.*`` name (``""`` for ``ember`` itself)."""
    parts = name.split(".")
    if parts[0] != "ember":
        return None
    return parts[1] if len(parts) > 1 else ""


def violations_in(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line imports X`` for every import in ``path`` that breaks the layering."""
    module = _module_name(path, root)
    own = _top(module)
    if own in NAMESPACE or own == "":
        return []
    rel = path.relative_to(root).as_posix()
    if own not in LAYERS:
        return [f"{rel}:1 is in package ember.{own}, which no layer of docs/architecture.md §1 "
                f"names (add it to the layers)"]
    layer = LAYERS[own]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for name in _imported(node, module, path.name == "__init__.py"):
            why = _why(own, layer, _top(name))
            if why:
                found.append((node.lineno, f"{rel}:{node.lineno} imports {name} ({why})"))
    return [msg for _, msg in sorted(found)]


def _why(own: str, layer: int, target: str | None) -> str | None:
    if target is None or target == own:
        return None
    if target == "" or target in NAMESPACE:
        return "the top-level namespace; import the layer's module instead"
    if target not in LAYERS:
        return None  # e.g. ``from ember import Tensor`` is caught above; unknown: not ours
    other = LAYERS[target]
    if other > layer:
        return f"L{layer} may not import L{other}"
    if other == layer and layer in INDEPENDENT_LAYERS:
        return f"siblings in L{layer} never import each other"
    return None


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_layer_imports_only_from_below():
    found = [v for path in _sources() for v in violations_in(path)]
    assert not found, "layering violations (docs/architecture.md section 1):\n" + "\n".join(found)


def test_namespace_modules_are_exempt_but_not_importable_from_layers(tmp_path):
    # The checker itself must be able to fail: build a fake tree and check what it reports.
    fake = tmp_path / "ember"
    for pkg in ("core", "tensor", "nn", "optim", "ops"):
        (fake / pkg).mkdir(parents=True)
        (fake / pkg / "__init__.py").write_text("")
    (fake / "core" / "layout.py").write_text(
        "import numpy\nfrom ember.errors import DispatchError\n\n"
        "def f():\n    from ember.tensor import Tensor\n")
    (fake / "tensor" / "t.py").write_text("from ember.ops import add\nfrom . import t\n")
    (fake / "nn" / "m.py").write_text("import ember\nfrom ember.optim import SGD\n")
    (fake / "ops" / "x.py").write_text("from ..tensor import Tensor\nfrom .. import library\n")
    (fake / "demo.py").write_text("import ember.nn\nimport ember.compiler\n")
    (fake / "mystery").mkdir()
    (fake / "mystery" / "__init__.py").write_text("")

    found = {p.relative_to(tmp_path).as_posix(): violations_in(p, tmp_path)
             for p in sorted(fake.rglob("*.py"))}
    assert found["ember/core/layout.py"] == [
        "ember/core/layout.py:5 imports ember.tensor (L1 may not import L4)"]
    assert found["ember/tensor/t.py"] == ["ember/tensor/t.py:1 imports ember.ops (L4 may not "
                                          "import L6)"]
    assert found["ember/nn/m.py"] == [
        "ember/nn/m.py:1 imports ember (the top-level namespace; import the layer's module "
        "instead)",
        "ember/nn/m.py:2 imports ember.optim (siblings in L8 never import each other)"]
    assert found["ember/ops/x.py"] == [
        "ember/ops/x.py:2 imports ember.library (the top-level namespace; import the layer's "
        "module instead)"]
    assert found["ember/demo.py"] == []
    assert found["ember/mystery/__init__.py"][0].startswith("ember/mystery/__init__.py:1 is in "
                                                            "package ember.mystery")


def _contract_layers() -> list[tuple[list[str], bool]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["type"] == "layers"]
    out = []
    for raw in contract["layers"]:
        names = [n.strip().strip("()").removeprefix("ember.") for n in re.split(r"[|:]", raw)]
        out.append(([n for n in names if n in LAYERS], "|" in raw))
    return [(names, independent) for names, independent in out if names]


def test_import_linter_contract_matches_this_table():
    contract = _contract_layers()
    ours = sorted({v for v in LAYERS.values()}, reverse=True)
    assert [sorted(names) for names, _ in contract] == \
        [sorted(k for k, v in LAYERS.items() if v == layer) for layer in ours]
    for names, independent in contract:
        if LAYERS[names[0]] in INDEPENDENT_LAYERS:
            assert independent, f"siblings {names} must be independent ('|') in the contract"
