"""scripts/nccl_compare.py: nccl-tests' logs against measured times, once or over repeats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_modules import load_script

from kernbench.results.model import collective_fits, load, save

REPO = Path(__file__).resolve().parent.parent
nccl_compare = load_script("nccl_compare")

HEADER = "#       size         count      type   redop    root     time   algbw   busbw #wrong"


def nccl_log(micros: dict[int, float]) -> str:
    """An all_reduce_perf log: out of place and in place both `micros[size]`."""
    rows = [
        f"{size:>12} {size // 4:>12}     float     sum      -1   {t:6.2f}  0.10  0.10      0"
        f"   {t:6.2f}  0.10  0.10      0"
        for size, t in micros.items()
    ]
    return "\n".join(["# nccl-tests version 2.17.6", HEADER, *rows]) + "\n"


def reference_loop(path: Path, micros: dict[int, float]) -> Path:
    rows = [{"op": "allreduce", "bytes": size, "time_s": t * 1e-6} for size, t in micros.items()]
    path.write_text(json.dumps({"dtype": "fp32", "iters": 50, "inplace": True, "results": rows}))
    return path


def test_one_run_of_each_compares_size_by_size(tmp_path: Path) -> None:
    (tmp_path / "all_reduce.log").write_text(nccl_log({1024: 20.0, 65536: 30.0}))
    measured = reference_loop(tmp_path / "loop.json", {1024: 21.0, 65536: 30.3})
    report = nccl_compare.compare(tmp_path, [measured], "fp32")
    ratios = {r["bytes"]: r["ratio"] for r in report["rows"]}
    assert ratios == pytest.approx({1024: 1.05, 65536: 1.01})
    assert "nccl_tests_range_s" not in report["rows"][0]
    assert report["runs"] == {"nccl_tests": 1, "measured": 1}


def test_repeated_runs_compare_medians_and_keep_their_range(tmp_path: Path) -> None:
    # The machine's small-message latency wanders: 12.6 µs in one run, 20.6 in the next.
    for n, micros in enumerate((12.6, 20.6, 13.0), 1):
        (tmp_path / f"all_reduce_alt.{n}.log").write_text(nccl_log({1024: micros}))
    (tmp_path / "all_reduce.log").write_text(nccl_log({1024: 99.0}))  # another family
    loops = [reference_loop(tmp_path / f"loop{n}.json", {1024: t})
             for n, t in enumerate((13.5, 19.0, 14.0))]
    report = nccl_compare.compare(tmp_path, loops, "fp32", "_alt")
    (row,) = report["rows"]
    assert row["nccl_tests_s"] == pytest.approx(13.0e-6)
    assert row["kernbench_s"] == pytest.approx(14.0e-6)
    assert row["nccl_tests_range_s"] == pytest.approx([12.6e-6, 20.6e-6])
    report["bands"] = nccl_compare.band_summary(report["rows"])
    text = nccl_compare.markdown(report)
    assert "Medians over 3 nccl-tests runs and 3 measured runs" in text
    assert "| 13.00 (12.60-20.60) | 14.00 (13.50-19.00) | 1.077 |" in text


def test_repeats_are_read_in_numeric_order(tmp_path: Path) -> None:
    for n in (1, 2, 10):
        (tmp_path / f"all_gather.{n}.log").write_text("")
    names = [p.name for p in nccl_compare.test_logs(tmp_path, "all_gather", "")]
    assert names == ["all_gather.1.log", "all_gather.2.log", "all_gather.10.log"]


def test_runs_split_over_sizes_are_fitted_as_one_and_alpha_is_held_to_nccl_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def modeled(size: int) -> float:  # t = α + S/β with α = 5 µs, β = 100 GB/s
        return 5e-6 + size / 100e9

    small, large = [2**p for p in range(10, 23)], [2**p for p in range(23, 31)]
    measured = {"small.json": small, "large.json": large}
    monkeypatch.setattr(nccl_compare, "measured_times", lambda path, dtype: (
        {("allreduce", s, True): modeled(s) for s in measured[path.name]}, {}, "kernbench"))
    (tmp_path / "all_reduce_mpi.1.log").write_text(nccl_log({s: modeled(s) * 1e6 for s in small}))
    (tmp_path / "all_reduce_mpi.2.log").write_text(nccl_log({s: modeled(s) * 1e6 for s in large}))
    report = nccl_compare.compare(
        tmp_path, [tmp_path / "small.json", tmp_path / "large.json"], "fp32", "_mpi")
    fit = report["fits"]["allreduce n=2 fp32 in-place"]
    assert fit["alpha_s"] == pytest.approx(5e-6, rel=0.01)
    assert fit["beta_bytes_per_s"] == pytest.approx(100e9, rel=0.01)
    assert len(report["rows"]) == len(small) + len(large)
    (line,) = nccl_compare.alpha_lines(report)
    assert "0.99" in line or "1.00" in line
    assert "at 1 KiB" in line and line.endswith(": met")
    # nccl-tests' points for the figure pool the same logs: one point per size.
    points = nccl_compare.reference(tmp_path, "fp32", "_mpi", 2)["points"]
    assert [p["bytes"] for p in points] == small + large


def test_a_results_files_fits_are_made_now_not_read_from_it(tmp_path: Path) -> None:
    # The committed sweep's stored fits predate ADR 0047: the report refits, as figures do.
    results = load(REPO / "benches/data/milestone-1h-ccl.json")
    name = "allreduce n=2 fp32 in-place"
    stale = results.fits[name].model_copy(update={"alpha_s": 1e-3})
    save(results.model_copy(update={"fits": {**results.fits, name: stale}}), tmp_path / "r.json")
    _, fits = nccl_compare.kernbench_times(tmp_path / "r.json", "fp32")
    assert fits[name] == collective_fits(results.cells)[name].model_dump()
    assert fits[name]["alpha_s"] == pytest.approx(6.85e-6, rel=0.01)


nccl_bands = load_script("nccl_bands")


def test_bands_count_the_cells_within_each_bands_target_per_reference(tmp_path: Path) -> None:
    def report(ratios: dict[int, float]) -> dict:
        return {"rows": [{"op": "allreduce", "bytes": size, "inplace": True, "ratio": r}
                         for size, r in ratios.items()]}

    eager = report({1024: 0.60, 32768: 1.09, 1 << 17: 1.02, 1 << 21: 0.96, 1 << 26: 1.01})
    graph = report({1024: 1.12, 1 << 21: 1.00})
    found = nccl_bands.bands({"eager": eager, "-G": graph})
    # 10% below 64 KiB: 1.09 is in, 0.60 is not; 3% from there: 0.96 is out.
    assert found["eager"]["below 64 KiB"] == {"cells": 2, "within": 1, "low": 0.60,
                                              "high": 1.09, "median": pytest.approx(0.845)}
    assert found["eager"]["64-512 KiB"]["within"] == 1
    assert found["eager"]["1-16 MiB"]["within"] == 0
    assert found["eager"]["32 MiB-1 GiB"]["within"] == 1
    assert found["-G"]["64-512 KiB"] == {"cells": 0}
    text = nccl_bands.markdown({"eager": eager, "-G": graph})
    assert "| eager | 0.600-1.090, median 0.845 (1/2) |" in text
    assert "| allreduce | 1 KiB | in place | 0.600 | 1.120 |" in text
    assert "| allreduce | 128 KiB | in place | 1.020 | - |" in text
