"""What a bench's cells must be to run at all, refused by `validate` at the line that
makes them so: a world size that is not a count of ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.errors import EXIT_USAGE, SpecError
from kernbench.spec.loader import load_bench

COLLECTIVE = "name: b\ndescription: d\nkernel: collective\naxes:\n  op: [allreduce]\n"


def error_of(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert info.value.code == EXIT_USAGE
    return str(info.value).removeprefix(f"{path}:")


@pytest.mark.parametrize("value", ["0", "-2"])
def test_a_world_size_under_one_is_refused_at_its_value(tmp_path: Path, value: str) -> None:
    text = COLLECTIVE + f"  bytes: [1024]\n  world_size:\n    - 1\n    - {value}\n"
    assert error_of(tmp_path, text) == (
        f"9: axes.world_size.1: a cell runs on world_size ranks: a whole number, at least 1 "
        f"(got {value})"
    )


def test_any_kernels_world_size_is_a_count_of_ranks(tmp_path: Path) -> None:
    text = "name: b\ndescription: d\nkernel: sleep\nvariants:\n  v: {world_size: 0}\n"
    assert error_of(tmp_path, text).startswith("5: variants.v.world_size: a cell runs on ")
