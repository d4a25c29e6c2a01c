"""A Python file loaded as a module: the tools under scripts/ (not a package) and the
examples the docs hold."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py, executed afresh."""
    return load_module(SCRIPTS / f"{name}.py", name)
