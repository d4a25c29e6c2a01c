"""Pinned autotune for any Triton tuner (execute/autotune_pins.py), with a stand-in for
Triton's Autotuner that keeps its shape: a cache per key, `prune_configs` on a miss,
every pruned config timed, `best_config` and `configs_timings` after the call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernbench.execute.autotune_pins import (
    AutotunePins,
    UnpinnedAutotune,
    describe,
    install,
    kernel_name,
)
from kernbench.execute.pins import PinStore, load_pins


class Config:
    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def __repr__(self) -> str:
        return f"Config({self.kwargs}, {self.num_warps})"


class Tensor:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


def add_kernel(x, n, BLOCK):  # noqa: N803 - a Triton-style meta-parameter
    return x, n, BLOCK


class FakeJit:
    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.calls: list[dict[str, Any]] = []

    def run(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append(kwargs)
        return "ran"


class FakeAutotuner:
    """Triton's Autotuner.run and prune_configs, less the GPU."""

    def __init__(self, configs: list[Config], key: list[str], speed: dict[int, float]):
        self.fn = FakeJit(add_kernel)
        self.configs = configs
        self.keys = key
        self.arg_names = ["x", "n"]
        self.cache: dict[tuple[Any, ...], Config] = {}
        self.speed = speed  # BLOCK -> seconds, the "measurement"
        self.timed: list[Config] = []

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        named = {**self.nargs, **kwargs}
        key = [named[k] for k in self.keys] + [
            str(v.dtype) for v in named.values() if hasattr(v, "dtype")
        ]
        if tuple(key) not in self.cache:
            pruned = self.prune_configs(kwargs)
            timings = {}
            for config in pruned:
                self.timed.append(config)
                timings[config] = [self.speed[config.kwargs["BLOCK"]], 0.0, 0.0]
            self.cache[tuple(key)] = min(timings, key=lambda c: timings[c][0])
            self.configs_timings = timings
        self.best_config = self.cache[tuple(key)]
        return self.fn.run(*args, **kwargs, **self.best_config.kwargs)

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Config]:
        return self.configs


class LibTuner(FakeAutotuner):
    """A library's own tuner that overrides run and calls its parent's (as FlagGems'
    LibTuner does)."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return super().run(*args, **kwargs)


Use = Callable[[AutotunePins], None]
CONFIGS = [Config({"BLOCK": 64}), Config({"BLOCK": 128}), Config({"BLOCK": 256}, 8)]


@pytest.fixture
def use() -> Iterator[Callable[[AutotunePins], None]]:
    """Installs the pins given on the fake tuner class (the last ones win), and undoes it."""
    undo: list[Callable[[], None]] = []

    def install_pins(pins: AutotunePins) -> None:
        if undo:
            undo.pop()()
        undo.append(install(pins, FakeAutotuner))

    yield install_pins
    if undo:
        undo.pop()()


def pins(tmp_path: Path, mode: str) -> AutotunePins:
    path = tmp_path / "pins.json"
    return AutotunePins(PinStore(read=[path], write=[path]), mode, "Fake GPU")


def test_recorded_then_replayed_in_a_fresh_tuner_without_timing(tmp_path: Path, use: Use) -> None:
    use(pins(tmp_path, "record"))
    first = FakeAutotuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0})
    first.run(Tensor("bf16"), 4096)
    assert len(first.timed) == 3
    saved = load_pins(tmp_path / "pins.json")
    (key,) = saved
    assert key.startswith(f"triton:{__name__}.add_kernel|Fake GPU|")
    assert '"n":4096' in key and "bf16" in key
    assert saved[key]["winner"] == {"kwargs": {"BLOCK": 128}, "num_warps": 4, "num_stages": 3}
    assert [c["time_s"] for c in saved[key]["candidates"]] == [3.0, 1.0, 2.0]

    replaying = pins(tmp_path, "replay")
    use(replaying)
    # Another process: the speeds now favour another config, but the pin holds.
    second = FakeAutotuner(CONFIGS, ["n"], speed={64: 1.0, 128: 9.0, 256: 2.0})
    assert second.run(Tensor("bf16"), 4096) == "ran"
    assert [c.kwargs for c in second.timed] == [{"BLOCK": 128}]  # pruned to the pin
    assert second.best_config is CONFIGS[1]
    assert second.fn.calls[-1] == {"BLOCK": 128}
    assert replaying.take_actions() == {key: "replayed"}
    second.run(Tensor("bf16"), 4096)  # cached by the tuner: nothing asked again
    assert replaying.take_actions() == {}


def test_a_key_without_pin_on_a_replaying_side_is_reported_not_tuned(
    tmp_path: Path, use: Use
) -> None:
    use(pins(tmp_path, "record"))
    FakeAutotuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0}).run(Tensor("bf16"), 4096)
    use(pins(tmp_path, "replay"))
    tuner = FakeAutotuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0})
    with pytest.raises(UnpinnedAutotune, match="no pin recorded; re-record the pins"):
        tuner.run(Tensor("bf16"), 8192)  # a new key
    assert tuner.timed == []
    with pytest.raises(UnpinnedAutotune, match="no pin recorded"):
        tuner.run(Tensor("fp16"), 4096)  # the same n, another dtype: another key


def test_a_changed_config_space_makes_the_pin_stale(tmp_path: Path, use: Use) -> None:
    use(pins(tmp_path, "record"))
    FakeAutotuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0}).run(Tensor("bf16"), 64)
    use(pins(tmp_path, "replay"))
    grown = FakeAutotuner(
        [*CONFIGS, Config({"BLOCK": 512})], ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0, 512: 0.5}
    )
    with pytest.raises(UnpinnedAutotune, match=r"stale pin \(fingerprint changed: source_hash\)"):
        grown.run(Tensor("bf16"), 64)


def test_auto_mode_replays_what_it_has_and_records_the_rest(tmp_path: Path, use: Use) -> None:
    auto = pins(tmp_path, "auto")
    use(auto)
    tuner = FakeAutotuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0})
    tuner.run(Tensor("bf16"), 1)
    assert list(auto.take_actions().values()) == ["recorded"]
    fresh = FakeAutotuner(CONFIGS, ["n"], speed={64: 0.1, 128: 1.0, 256: 2.0})
    fresh.run(Tensor("bf16"), 1)
    assert list(auto.take_actions().values()) == ["replayed"]
    assert fresh.best_config is CONFIGS[1]


def test_a_subclass_with_its_own_run_is_pinned_once(tmp_path: Path, use: Use) -> None:
    recording = pins(tmp_path, "record")
    use(recording)
    tuner = LibTuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0})
    tuner.run(Tensor("bf16"), 7)
    assert list(recording.take_actions().values()) == ["recorded"]
    replaying = pins(tmp_path, "replay")
    use(replaying)
    again = LibTuner(CONFIGS, ["n"], speed={64: 0.1, 128: 1.0, 256: 2.0})
    again.run(Tensor("bf16"), 7)
    assert again.best_config is CONFIGS[1]
    assert list(replaying.take_actions().values()) == ["replayed"]


def test_uninstall_restores_the_class(tmp_path: Path) -> None:
    original_run, original_prune = FakeAutotuner.run, FakeAutotuner.prune_configs
    undo = install(pins(tmp_path, "replay"), FakeAutotuner)
    assert FakeAutotuner.run is not original_run
    undo()
    assert FakeAutotuner.run is original_run
    assert FakeAutotuner.prune_configs is original_prune
    tuner = FakeAutotuner(CONFIGS, ["n"], speed={64: 3.0, 128: 1.0, 256: 2.0})
    tuner.run(Tensor("bf16"), 3)  # not pinned any more: tunes freely
    assert len(tuner.timed) == 3


def test_names_and_configs_are_json(tmp_path: Path) -> None:
    tuner = FakeAutotuner(CONFIGS, ["n"], speed={})
    assert kernel_name(tuner) == f"triton:{__name__}.add_kernel"
    assert describe(CONFIGS[2]) == {"kwargs": {"BLOCK": 256}, "num_warps": 8, "num_stages": 3}
