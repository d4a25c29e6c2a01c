"""Pinned autotune for every `triton.autotune` tuner in the process, not only kernbench's.

An op bench runs library code (FlagGems) whose Triton kernels tune themselves in every
new process; near-ties flip between processes, so two rounds or two A/B sides could run
different configs and call the difference an effect. This module patches Triton's
`Autotuner` class (and any subclass with its own `run` or `prune_configs`, such as a
library's own tuner) so that:

- where a key must be tuned (Triton calls `prune_configs` only on a cache miss), a pinned
  config for it is looked up; when found, the candidates are pruned to that one config,
  so nothing is timed (a lone config is taken as is, and at worst timed alone);
- with no pin, a recording side lets Triton tune and records `best_config` after the
  call; a replaying side raises `UnpinnedAutotune`, which fails the cell with the key:
  a key that was never recorded is reported, never silently tuned.

A pin is keyed like `pins.py`'s: `triton:<module>.<function>`, the device model, and the
tuner's key values plus the dtypes of its tensor arguments (what Triton keys on). Its
fingerprint hashes the function's source and the config space, with the library versions.
Triton is imported only by `install()` without an explicit class, so the logic is tested
with a stand-in tuner.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

from kernbench.execute import pins as pinning

AUTOTUNER_MODULE = "triton.runtime.autotuner"
_PATCHED = ("run", "prune_configs")
_ORIGINAL = "_kernbench_original_"


class UnpinnedAutotune(RuntimeError):
    """A tuner asked to tune a key the replaying side has no (valid) pin for."""


class AutotunePins:
    """The pins every patched tuner in this process records into or replays from."""

    def __init__(self, store: pinning.PinStore, mode: str, device_model: str) -> None:
        self.store = store
        self.mode = mode  # pins.PinMode: auto (replay where pinned, else record), record, replay
        self.device_model = device_model
        self.actions: dict[str, str] = {}  # pin key -> recorded / replayed, since last taken

    def take_actions(self) -> dict[str, str]:
        """What the tuners did since the last call (a cell's share, for its results)."""
        actions, self.actions = self.actions, {}
        return actions

    def prune(self, tuner: Any, kwargs: dict[str, Any]) -> list[Any] | None:
        """The pinned config as the only candidate, or None to let the tuner tune (and
        record its choice after the call)."""
        key, current = self._key(tuner, kwargs), self._fingerprint(tuner)
        tuner._kernbench_pending = None
        if self.mode != "record":
            found = self.store.lookup(key, current)
            if found.pin is not None:
                config = _matching(tuner.configs, found.pin["winner"])
                if config is not None:
                    self.actions[key] = "replayed"
                    return [config]
                problem = "its pinned config is not among the tuner's configs"
            elif found.stale is not None:
                problem = found.describe_stale(current)
            else:
                problem = "no pin recorded"
            if self.mode == "replay":
                raise UnpinnedAutotune(f"autotune key {key}: {problem}; re-record the pins")
        tuner._kernbench_pending = (key, current)
        return None

    def tuned(self, tuner: Any) -> None:
        """After a call that tuned: record the tuner's choice."""
        pending = getattr(tuner, "_kernbench_pending", None)
        if pending is None:
            return
        tuner._kernbench_pending = None
        key, current = pending
        timings = getattr(tuner, "configs_timings", None) or {}
        candidates = [
            {"config": describe(config), "time_s": _first_number(timing)}
            for config, timing in timings.items()
        ]
        self.store.record(key, current, describe(tuner.best_config), candidates)
        self.actions[key] = "recorded"

    def _key(self, tuner: Any, kwargs: dict[str, Any]) -> str:
        arguments = {**(getattr(tuner, "nargs", None) or {}), **kwargs}
        named = {k: v for k, v in arguments.items() if k in tuner.arg_names}
        params = {
            "key": {k: _jsonable(named[k]) for k in tuner.keys if k in named},
            "dtypes": [str(v.dtype) for v in named.values() if hasattr(v, "dtype")],
        }
        return pinning.pin_key(kernel_name(tuner), self.device_model, params)

    def _fingerprint(self, tuner: Any) -> dict[str, Any]:
        function = base_function(tuner)
        try:
            text = inspect.getsource(function)
        except (OSError, TypeError):
            text = repr(function)
        space = json.dumps([describe(c) for c in tuner.configs], sort_keys=True, default=str)
        source = hashlib.sha256((text + space).encode()).hexdigest()[:16]
        return pinning.fingerprint(kernel_name(tuner), source, self.device_model)


def base_function(tuner: Any) -> Any:
    """The Python function under the tuner (through heuristics and JIT wrappers)."""
    function = getattr(tuner, "base_fn", None) or tuner.fn
    while not inspect.isfunction(function) and hasattr(function, "fn"):
        function = function.fn
    return function


def kernel_name(tuner: Any) -> str:
    function = base_function(tuner)
    module = getattr(function, "__module__", "?")
    return f"triton:{module}.{getattr(function, '__qualname__', repr(function))}"


def describe(config: Any) -> dict[str, Any]:
    """A Triton `Config` as JSON: its meta-parameters and launch options."""
    described = {"kwargs": {k: _jsonable(v) for k, v in dict(config.kwargs).items()}}
    for option in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        value = getattr(config, option, None)
        if value is not None:
            described[option] = value
    return described


def _matching(configs: list[Any], winner: dict[str, Any]) -> Any | None:
    return next((c for c in configs if describe(c) == winner), None)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _first_number(timing: Any) -> float | None:
    # Triton times each config as [median, p20, p80] (older versions: one float).
    if isinstance(timing, list | tuple):
        timing = timing[0] if timing else None
    return float(timing) if isinstance(timing, int | float) else None


_ACTIVE: list[AutotunePins] = []


def install(pins: AutotunePins, tuner_class: type | None = None) -> Callable[[], None]:
    """Route every tuner of `tuner_class` (default: Triton's Autotuner) and its
    subclasses through `pins`; returns the function that undoes it."""
    if tuner_class is None:
        tuner_class = sys.modules[AUTOTUNER_MODULE].Autotuner
    _ACTIVE[:] = [pins]
    patched = [c for c in _family(tuner_class) if _patch(c)]

    def uninstall() -> None:
        for cls in patched:
            for name in _PATCHED:
                original = cls.__dict__.get(_ORIGINAL + name)
                if original is not None:
                    setattr(cls, name, original)
                    delattr(cls, _ORIGINAL + name)
        _ACTIVE.clear()

    return uninstall


def install_if_loaded(pins: AutotunePins) -> bool:
    """Install once Triton is imported (a backend imports it when a cell is built), so a
    process that never loads Triton never imports it."""
    if AUTOTUNER_MODULE not in sys.modules:
        return False
    if not _ACTIVE or _ACTIVE[0] is not pins:
        install(pins)
    else:  # subclasses defined since (a library imported after the first install)
        for cls in _family(sys.modules[AUTOTUNER_MODULE].Autotuner):
            _patch(cls)
    return True


def _family(base: type) -> list[type]:
    found: list[type] = [base]
    todo: list[type] = list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _patch(cls: type) -> bool:
    """Wrap the methods `cls` defines itself (not inherited ones); False if none or done."""
    done = False
    for name in _PATCHED:
        original = cls.__dict__.get(name)
        if original is None or _ORIGINAL + name in cls.__dict__:
            continue
        setattr(cls, _ORIGINAL + name, original)
        setattr(cls, name, _WRAPPERS[name](original))
        done = True
    return done


def _wrap_prune(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prune_configs(self: Any, kwargs: dict[str, Any], *rest: Any, **more: Any) -> Any:
        if _ACTIVE and not getattr(self, "_kernbench_in_prune", False):
            pinned = _ACTIVE[0].prune(self, kwargs)
            if pinned is not None:
                return pinned
        # A subclass's prune calling its parent's goes through here once more: pass it on.
        self._kernbench_in_prune = True
        try:
            return original(self, kwargs, *rest, **more)
        finally:
            self._kernbench_in_prune = False

    return prune_configs


def _wrap_run(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_kernbench_in_run", False):
            return original(self, *args, **kwargs)
        self._kernbench_in_run = True
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            self._kernbench_pending = None
            raise
        finally:
            self._kernbench_in_run = False
        if _ACTIVE:
            _ACTIVE[0].tuned(self)
        return result

    return run


_WRAPPERS = {"run": _wrap_run, "prune_configs": _wrap_prune}
