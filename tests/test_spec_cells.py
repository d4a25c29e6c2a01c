"""What a bench's cells must be to run at all, refused by `validate` at the line that
makes them so: a world size that is not a count of ranks, two cells of one id, no cell at
all, no dtype."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import spec_error_of

from kernbench.analyze.checks import check_bench
from kernbench.errors import SpecError
from kernbench.spec.loader import load_bench

SLEEP = "name: b\ndescription: d\nkernel: sleep\n"
COLLECTIVE = "name: b\ndescription: d\nkernel: collective\naxes:\n  op: [allreduce]\n"


@pytest.mark.parametrize("value", ["0", "-2"])
def test_a_world_size_under_one_is_refused_at_its_value(tmp_path: Path, value: str) -> None:
    text = COLLECTIVE + f"  bytes: [1024]\n  world_size:\n    - 1\n    - {value}\n"
    assert spec_error_of(tmp_path, text) == (
        f"9: axes.world_size.1: a cell runs on world_size ranks: a whole number, at least 1 "
        f"(got {value})"
    )


def test_any_kernels_world_size_is_a_count_of_ranks(tmp_path: Path) -> None:
    text = "name: b\ndescription: d\nkernel: sleep\nvariants:\n  v: {world_size: 0}\n"
    assert spec_error_of(tmp_path, text).startswith("5: variants.v.world_size: a cell runs on ")


@pytest.mark.parametrize(
    ("axes", "field", "message"),
    [
        ("axes:\n  work_us: [1, 2, 1]", "axes.work_us", "1 is given twice (values 0 and 2)"),
        ("axes:\n  work_us: [1, '1']", "axes.work_us", "1 is given twice (values 0 and 1)"),
        ("dtypes: [fp32, fp64, fp32]", "dtypes", "fp32 is given twice (values 0 and 2)"),
        (
            "axes:\n  work_us: [1, 1]\n  scale: [2, 2]\nzip: [[work_us, scale]]",
            "axes.work_us",
            "values 0 and 1 of the zipped axes work_us, scale are the same (work_us=1, scale=2)",
        ),
    ],
)
def test_values_that_make_two_cells_of_one_id_are_refused(
    tmp_path: Path, axes: str, field: str, message: str
) -> None:
    line = 4 if field == "dtypes" else 5
    assert spec_error_of(tmp_path, SLEEP + axes + "\n") == (
        f"{line}: {field}: {message}: two cells of one id"
    )


def test_a_value_repeated_in_a_zip_group_of_distinct_rows_passes(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(SLEEP + "axes:\n  work_us: [1, 1]\n  scale: [1, 2]\nzip: [[work_us, scale]]\n")
    assert load_bench(path).axes["work_us"] == [1, 1]


@pytest.mark.parametrize(
    "rules", ["[{}]", "\n  - {work_us: 1}\n  - {work_us: 2, variant: default}"]
)
def test_exclusions_that_drop_every_cell_are_refused(tmp_path: Path, rules: str) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(SLEEP + f"axes:\n  work_us: [1, 2]\nexclude: {rules}\n")
    with pytest.raises(SpecError) as info:
        check_bench(load_bench(path), path)
    assert str(info.value) == f"{path}:6: exclude: the exclusions drop every cell"


def test_a_bench_excluded_on_one_device_only_is_left_to_the_run(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(SLEEP + "axes:\n  work_us: [1, 2]\nexclude: [{device: cpu}]\n")
    check_bench(load_bench(path), path)


def test_an_empty_dtypes_list_is_refused_like_an_empty_axis(tmp_path: Path) -> None:
    assert spec_error_of(tmp_path, SLEEP + "dtypes: []\n") == (
        "4: dtypes: an empty list: give at least one dtype, or leave `dtypes` out"
    )
    assert spec_error_of(tmp_path, SLEEP + "axes:\n  n: []\n").startswith("5: axes.n: List should")


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ("  work_us: [1]\n  size: [{work_us: 2, scale: 1}]\n",
         "6: axes.size.0.work_us: 'work_us' is set by the axis 'work_us' too"),
        ("  size: [{work_us: 2, scale: 1}]\n  work_us: [1]\n",
         "6: axes.work_us: 'work_us' is set by the axis 'size' too"),
        ("  size: [{work_us: 2}, {work_us: 3, dtype: fp32}]\ndtypes: [fp16]\n",
         "6: dtypes: 'dtype' is set by the axis 'size' too"),
        ("  size: [{work_us: 2}]\n  other: [{scale: 1}, {scale: 2, work_us: 3}]\n",
         "6: axes.other.1.work_us: 'work_us' is set by the axis 'size' too"),
    ],
)
def test_two_axes_setting_one_parameter_are_refused(
    tmp_path: Path, axes: str, message: str
) -> None:
    """The cell would get one axis's value while its id shows both (`n=1,shape=2` ran n=2)."""
    assert spec_error_of(tmp_path, SLEEP + "axes:\n" + axes) == (
        f"{message}; a parameter comes from one axis"
    )
