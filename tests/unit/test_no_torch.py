"""ember never imports torch: only tests, benchmarks and interop tests may (docs/architecture.md
section 1)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def torch_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line imports X`` for each import of ``torch`` (or a torch submodule) in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        rel = path.relative_to(root).as_posix()
        found += [(node.lineno, f"{rel}:{node.lineno} imports {n}") for n in names
                  if n.split(".")[0] == "torch"]
    return [msg for _, msg in sorted(found)]


def test_no_module_under_ember_imports_torch():
    found = [v for p in sorted((ROOT / "ember").rglob("*.py")) for v in torch_imports(p)]
    assert not found, "ember/ must not import torch:\n" + "\n".join(found)


def test_checker_finds_torch_imports(tmp_path):
    bad = tmp_path / "ember" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("import numpy\nimport torch.nn as nn\n\ndef f():\n    from torch import Tensor\n"
                   "    import torchvision\n    from .torch import x\n")
    assert torch_imports(bad, tmp_path) == ["ember/bad.py:2 imports torch.nn",
                                            "ember/bad.py:5 imports torch"]


def test_import_ember_does_not_load_torch():
    code = ("import sys, ember, ember.library, ember.utils.dispatch\n"
            "ember.ones(2) + 1\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_demo_runs_without_torch():
    code = ("import runpy, sys\n"
            "runpy.run_module('ember.demo', run_name='__main__')\n"
            "assert 'torch' not in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    for heading in ("one storage, many views", "meta device", "dispatcher"):
        assert heading in out.stdout
    assert "zeros.default    BackendSelect -> CPU" in out.stdout
