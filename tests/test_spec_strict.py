"""Strict counts, finite floats and a size limit in bench and profile files (issue 12,
items 9 and 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import spec_error_of

from kernbench.errors import SpecError
from kernbench.spec.loader import load_bench, load_hardware
from kernbench.spec.yaml_document import MAX_FILE_BYTES

HEAD = "name: b\ndescription: d\nkernel: sleep\n"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("rounds: true", "rounds: Input should be a valid integer (got True)"),
        ("rounds: '2'", "rounds: Input should be a valid integer (got '2')"),
        ("rounds: 2.0", "rounds: Input should be a valid integer (got 2.0)"),
        ("timer: {min_samples: '5'}", "timer.min_samples: Input should be a valid integer "
         "(got '5')"),
        ("requires: {world_size: true}", "requires.world_size: Input should be a valid integer "
         "(got True)"),
        ("ab: {switch: X, aa: 'yes'}", "ab.aa: Input should be a valid boolean (got 'yes')"),
        ("ab: {switch: X, rounds: '6'}", "ab.rounds: Input should be a valid integer (got '6')"),
        ("timer: {settle_clock: 'yes'}", "timer.settle_clock: Input should be a valid boolean "
         "(got 'yes')"),
    ],
)
def test_counts_and_flags_are_strict(tmp_path: Path, line: str, message: str) -> None:
    assert spec_error_of(tmp_path, HEAD + line + "\n") == f"4: {message}"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("timer: {budget_s: .inf}", "timer.budget_s: Input should be a finite number (got inf)"),
        ("timer: {warmup_s: .inf}", "timer.warmup_s: Input should be a finite number (got inf)"),
        ("timer: {cell_timeout_s: .inf}",
         "timer.cell_timeout_s: Input should be a finite number (got inf)"),
        ("timer: {rel_ci: .nan}", "timer.rel_ci: Input should be a finite number (got nan)"),
        ("timer: {budget_s: '0.5'}", "timer.budget_s: Input should be a valid number "
         "(got '0.5')"),
        ("timer: {warmup_s: true}", "timer.warmup_s: Input should be a valid number (got True)"),
        ("ab: {switch: X, min_effect: .inf}",
         "ab.min_effect: Input should be a finite number (got inf)"),
        ("ab: {switch: X, turn_ms: .inf}", "ab.turn_ms: Input should be a finite number "
         "(got inf)"),
    ],
)
def test_floats_are_finite_numbers(tmp_path: Path, line: str, message: str) -> None:
    assert spec_error_of(tmp_path, HEAD + line + "\n") == f"4: {message}"


@pytest.mark.parametrize("key", ["rel_ci", "settle_tol"])
@pytest.mark.parametrize("value", ["1", "5"])
def test_a_relative_width_is_a_fraction_not_a_percentage(
    tmp_path: Path, key: str, value: str
) -> None:
    """`rel_ci: 1` meant as 1% was a stopping rule every first sample met."""
    assert spec_error_of(tmp_path, HEAD + f"timer: {{{key}: {value}}}\n") == (
        f"4: timer.{key}: Input should be less than 1 (got {value})"
    )


def test_an_int_still_passes_where_a_float_is_wanted(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(HEAD + "timer: {budget_s: 1, warmup_s: 0}\nrounds: 3\n")
    bench = load_bench(path)
    assert (bench.timer.budget_s, bench.timer.warmup_s, bench.rounds) == (1.0, 0.0, 3)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e-3", 1e-3), ("5E-2", 5e-2), ("1e+3", 1e3), ("1.5e2", 150.0), (".5e1", 5.0)],
)
def test_an_exponent_without_a_dot_is_a_float(tmp_path: Path, text: str, value: float) -> None:
    # YAML 1.1 reads `1e-3` as a string; bench and profile files read it as YAML 1.2 does.
    path = tmp_path / "bench.yaml"
    path.write_text(HEAD + f"timer: {{cell_timeout_s: {text}, budget_s: {text}}}\n")
    timer = load_bench(path).timer
    assert (timer.cell_timeout_s, timer.budget_s) == (value, value)


def test_an_exponent_float_reads_in_a_profile_and_leaves_pyyaml_alone(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\ndescription: d\nkind: cpu\nmemory_gbs: {datasheet: 2e3}\n")
    assert load_hardware(path).memory_gbs.value == 2000.0
    assert yaml.safe_load("v: 1e-3") == {"v": "1e-3"}


def test_a_profile_ceiling_of_inf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\ndescription: d\nkind: cpu\nmemory_gbs: {datasheet: .inf}\n"
    )
    with pytest.raises(SpecError) as info:
        load_hardware(path)
    assert str(info.value) == (
        f"{path}:4: memory_gbs.datasheet: Input should be a finite number (got inf)"
    )


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many bytes were read from each file opened through Path.open (the loader's
    one way in), by path."""
    counts: dict[str, int] = {}
    real_open = Path.open

    class Counted:
        def __init__(self, stream: Any, name: str) -> None:
            self.stream, self.name = stream, name

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.stream.close()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.stream, name)

        def read(self, size: int = -1) -> Any:
            data = self.stream.read(size)
            counts[self.name] += len(data)
            return data

    def counted_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "r" not in mode:
            return real_open(self, mode, *args, **kwargs)
        counts.setdefault(str(self), 0)
        return Counted(real_open(self, mode, *args, **kwargs), str(self))

    monkeypatch.setattr(Path, "open", counted_open)
    return counts


def test_dev_zero_is_refused_without_reading_it(bytes_read: dict[str, int]) -> None:
    with pytest.raises(SpecError) as info:
        load_bench(Path("/dev/zero"))
    assert str(info.value) == "/dev/zero: cannot read: not a regular file"
    assert "/dev/zero" not in bytes_read  # not even opened: an endless read never starts


def test_a_file_over_the_size_limit_is_refused_reading_one_byte_past_the_limit(
    tmp_path: Path, bytes_read: dict[str, int]
) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(HEAD + "# " + "x" * MAX_FILE_BYTES + "\n")
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert str(info.value) == f"{path}: larger than 1 MiB, too big for a bench or profile file"
    assert bytes_read[str(path)] == MAX_FILE_BYTES + 1


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_bench(tmp_path)
    assert str(info.value) == f"{tmp_path}: cannot read: a folder"
