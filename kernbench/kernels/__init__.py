"""The kernel registry: built-in names, and `module:factory` references beside a bench.

Built-in kernels are named here as "module:function" strings and imported only when a
cell is built, so validating a bench never imports torch or triton. A bench's own
kernel (`kernel: mymod:make`), or its operator's module (`op: mymod.func`), is imported
from the bench file's folder first, under a private module name, so a same-named module
imported from elsewhere neither shadows it nor is replaced by it.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from kernbench.errors import MEANT_CUTOFF
from kernbench.kernels.failure import one_line, raised_at

BUILTINS: dict[str, str] = {
    "gemm": "kernbench.kernels.gemm:make",
    "collective": "kernbench.kernels.collective:make",
    "sleep": "kernbench.kernels.synthetic:make_sleep",
}
# Built-ins that need torch whatever the cell (torch.distributed): `list` tells so unimported.
NEEDS_TORCH = frozenset({"collective"})


class FactoryError(Exception):
    """A kernel reference that cannot be resolved; the message is one line."""


class MissingExtra(FactoryError):
    """A reference that needs one of kernbench's optional dependencies (torch, FlagGems),
    not installed here: nothing wrong with the file that names it."""


def split_ref(kernel: str) -> tuple[str, str]:
    """`module:factory` (a built-in name first mapped through BUILTINS) -> (module, factory)."""
    ref = BUILTINS.get(kernel, kernel)
    module, sep, factory = ref.partition(":")
    if not sep:
        known = ", ".join(sorted(BUILTINS))
        raise FactoryError(f"unknown kernel {kernel!r}; built-in: {known} (or give module:factory)")
    return module, factory


def resolve_factory(kernel: str, bench_dir: Path) -> Callable[..., object]:
    """Import and return the factory that `kernel` names (a built-in or module:factory)."""
    module_name, factory_name = split_ref(kernel)
    module = _import(module_name, None if kernel in BUILTINS else Path(bench_dir))
    factory = getattr(module, factory_name, None)
    if factory is None:
        names = [name for name, value in vars(module).items()
                 if callable(value) and not name.startswith("_")]
        meant = difflib.get_close_matches(factory_name, names, n=1, cutoff=MEANT_CUTOFF)
        guess = f"; did you mean {module_name}:{meant[0]}?" if meant else ""
        raise FactoryError(f"module {module_name!r} has no factory {factory_name!r}{guess}")
    if not callable(factory):
        raise FactoryError(f"{module_name}:{factory_name} is not callable")
    return factory


def kernel_source_path(kernel: str, bench_dir: Path) -> Path | None:
    """The file of the factory's module, without importing it (None if not found)."""
    try:
        module_name, _ = split_ref(kernel)
    except FactoryError:
        return None
    if kernel not in BUILTINS:
        local = local_module_file(module_name, Path(bench_dir))
        if local is not None:
            return local
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return None
    return Path(spec.origin)


def local_module_file(module_name: str, bench_dir: Path) -> Path | None:
    """The file of `module_name` in the bench's folder (what `import_beside` imports)."""
    base = bench_dir.joinpath(*module_name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _import(module_name: str, bench_dir: Path | None) -> ModuleType:
    local = import_beside(module_name, bench_dir) if bench_dir is not None else None
    if local is not None:
        return local
    try:
        return _guarded(module_name, lambda: importlib.import_module(module_name))
    except FactoryError as exc:
        missing = exc.__cause__
        if (bench_dir is None or not isinstance(missing, ModuleNotFoundError)
                or not f"{module_name}.".startswith(f"{missing.name}.")):
            raise  # a built-in's import, or a module found that imports one missing
        file = module_name.replace(".", "/") + ".py"
        raise FactoryError(f"cannot import {module_name!r}: no {file} beside the bench file, "
                           "nor a module of that name on sys.path") from None


def import_beside(module_name: str, bench_dir: Path) -> ModuleType | None:
    """`module_name` from its file in the bench's folder (`mod.py` or `mod/__init__.py`),
    under a private name; None where the folder has none. `kernel: mod:factory` and
    `op: mod.func` both look here first (ADR 0004)."""
    local = local_module_file(module_name, Path(bench_dir))
    if local is None:
        return None
    return _guarded(module_name, lambda: _import_file(module_name, local, Path(bench_dir)))


def _guarded(module_name: str, load: Callable[[], ModuleType]) -> ModuleType:
    """The module `load` imports; whatever its top level raises is one FactoryError."""
    try:
        return load()
    except FactoryError:
        raise
    except BaseException as exc:  # a user's module may raise anything, even SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise FactoryError(f"cannot import {module_name!r}: {one_line(exc, raised_at(exc))}"
                           ) from exc


def _import_file(module_name: str, path: Path, bench_dir: Path) -> ModuleType:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    private = f"_kernbench_bench_{digest}_{module_name.replace('.', '_')}"
    cached = sys.modules.get(private)
    if cached is not None and getattr(cached, "__file__", None) == str(path):
        return cached
    spec = importlib.util.spec_from_file_location(private, path)
    if spec is None or spec.loader is None:
        raise FactoryError(f"cannot import {module_name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before running so dataclasses and pickling inside it can find it;
    # its folder is on the path meanwhile so it can import its own helpers.
    sys.modules[private] = module
    folder = str(bench_dir.resolve())
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(private, None)
        raise
    finally:
        sys.path.remove(folder)
    return module
