"""The package layout as a contract (docs/architecture.md): layers, sizes, no cycles."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kernbench"
TOP_LEVEL_MODULES = {"__init__.py", "__main__.py", "cli.py", "plan.py", "errors.py", "dtypes.py",
                     "units.py", "worker_env.py"}
MAX_MODULE_LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The kernbench modules `path` imports at module level (lazy imports are exempt)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in out if module in known and module != name}


def test_import_linter_layers_hold() -> None:
    """An upward import (say, timing importing execute) fails here and in CI."""
    command = shutil.which("lint-imports")
    if command is None:
        pytest.fail("lint-imports is not installed; it comes with the [test] extra")
    done = subprocess.run([command], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_layer_contract_lists_no_exceptions() -> None:
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    contract = text[text.index("[tool.importlinter]"):]
    assert "ignore_imports" not in contract


def test_no_import_cycle_between_modules() -> None:
    modules = _modules()
    graph = {name: _imports(path, name, set(modules)) for name, path in modules.items()}
    # A package's __init__ may re-export its own modules: that edge is not a cycle.
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_no_module_is_over_the_size_limit() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_the_top_level_holds_only_the_entry_points_and_the_packages() -> None:
    files = {p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix == ".py"}
    assert files <= TOP_LEVEL_MODULES


def test_the_ab_package_imports_nothing() -> None:
    # `kernbench.ab.settings` is read by `kernbench ab`'s option checks: importing the
    # package must not pull in the rounds, the analysis and the report writers with it.
    body = ast.parse((PACKAGE / "ab" / "__init__.py").read_text()).body
    assert [type(node) for node in body] == [ast.Expr]
    probe = ("import sys, kernbench.ab; "
             "print(sorted(m for m in sys.modules if m.startswith('kernbench.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, cwd=PACKAGE.parent).stdout
    assert loaded.strip() == "['kernbench.ab']"
