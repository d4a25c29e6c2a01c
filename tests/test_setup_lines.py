"""The report's lines on the machine, its clocks and the profile its ceilings come from."""

from __future__ import annotations

from pathlib import Path

from kernbench.render.report import write_report
from kernbench.render.setup_lines import ceilings_text, machine_text
from kernbench.results import model as results_io

DATA = Path(__file__).resolve().parents[1] / "benches" / "data"


def test_the_device_line_gives_cuda_host_and_the_sm_clock_the_samples_ran_at():
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    assert machine_text(results) == (
        "NVIDIA H200 (cuda), driver 580.159.04, CUDA 13.0, host vm; SM clock while "
        "sampling: median 1980 MHz (from 1590 to 1980)")


def test_the_ceilings_line_names_the_profile_that_pct_of_peak_and_the_figures_use(tmp_path):
    # The figures' footer named h200-isolated; the report, which judges each variant
    # against its ceilings, named no profile at all.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    assert ceilings_text(results) == (
        "hardware profile h200-isolated (measured on NVIDIA H200 2026-12-01, isolated duty; "
        "the datasheet where not measured)")
    write_report(results, tmp_path)
    for page in ("report.md", "report.html"):
        assert "Ceilings: hardware profile h200-isolated" in (tmp_path / page).read_text()


def test_a_run_without_a_profile_or_clocks_says_only_what_it_has():
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    bare = results.model_copy(update={
        "hardware": None,
        "cells": [c.model_copy(update={"rounds": [r.model_copy(update={"sm_clock_mhz": []})
                                                  for r in c.rounds]})
                  for c in results.cells]})
    assert ceilings_text(bare) is None
    assert machine_text(bare) == "NVIDIA H200 (cuda), driver 580.159.04, CUDA 13.0, host vm"


def test_the_ceilings_line_gives_the_date_each_part_was_measured_again(tmp_path):
    # After `calibrate --only memory` the line said the ceilings were measured on the
    # whole calibration's date, a memory ceiling taken days later among them.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    hardware = dict(results.hardware or {})
    hardware["calibration"] = {**hardware["calibration"], "remeasured": ["host", "memory"],
                               "memory_date": "2026-12-04T15:35:25Z",
                               "host_date": "2026-12-05T08:00:00Z"}
    again = results.model_copy(update={"hardware": hardware})
    assert ceilings_text(again) == (
        "hardware profile h200-isolated (measured on NVIDIA H200 2026-12-01, host measured "
        "again 2026-12-05, memory measured again 2026-12-04, isolated duty; the datasheet "
        "where not measured)")
    write_report(again, tmp_path)
    assert "memory measured again 2026-12-04" in (tmp_path / "report.md").read_text()
