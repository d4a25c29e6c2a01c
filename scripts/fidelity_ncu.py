"""ncu's output on the fidelity page: its CSV read into launches, the launches split into
cases at each marker kernel and into calls, each metric in seconds or MHz. Pure: the page
re-reads the raw launches its JSON keeps, so a parsing fix needs no GPU run."""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Sequence
from typing import Any

NCU_CALLS = 5  # profiled calls per case
NCU_CACHE = ("all", "none")
NCU_TIME = "gpu__time_duration.sum"
NCU_CLOCK = "sm__cycles_elapsed.avg.per_second"
MARKER = "FillFunctor"  # the kernel of marker.fill_(): splits the ncu launches into cases
UNIT_SECONDS = {
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
}  # fmt: skip
UNIT_MHZ = {
    "cycle/nsecond": 1e3, "cycle/usecond": 1.0, "cycle/msecond": 1e-3, "cycle/second": 1e-6,
    "ghz": 1e3, "mhz": 1.0, "khz": 1e-3, "hz": 1e-6,
}  # fmt: skip


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """One row per profiled launch, in launch order: id, kernel, and each metric as
    (value, unit) exactly as ncu printed it."""
    start = text.find('"ID"')
    if start < 0:
        return []
    launches: dict[int, dict[str, Any]] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        launch = launches.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"]})
        launch[row["Metric Name"]] = [row["Metric Value"], row["Metric Unit"]]
    return [{"id": i, **launches[i]} for i in sorted(launches)]


def ncu_value(pair: Sequence[str] | None, units: dict[str, float]) -> float | None:
    """A metric in seconds or MHz (per `units`); None when absent or in an unknown unit."""
    if not pair:
        return None
    value, unit = pair
    scale = units.get(unit.strip().lower())
    return None if scale is None else float(value.replace(",", "")) * scale


def split_cases(launches: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Launches after each marker belong to the next case; each case's launches are grouped
    into NCU_CALLS calls of equal length (cuBLAS may launch more than one kernel a call)."""
    segments: list[list[dict[str, Any]]] = []
    for launch in launches:
        if MARKER in launch["kernel"]:
            segments.append([])
        elif segments:
            segments[-1].append(launch)
    if len(segments) != len(names):
        return {"error": f"{len(segments)} markers for {len(names)} cases"}
    return {name: case_calls(segment) for name, segment in zip(names, segments, strict=True)}


def case_calls(segment: list[dict[str, Any]]) -> dict[str, Any]:
    if not segment or len(segment) % NCU_CALLS:
        return {"error": f"{len(segment)} launches for {NCU_CALLS} calls"}
    per_call = len(segment) // NCU_CALLS
    calls_s, clocks = [], []
    for i in range(NCU_CALLS):
        call = segment[i * per_call : (i + 1) * per_call]
        seconds = [ncu_value(k.get(NCU_TIME), UNIT_SECONDS) for k in call]
        mhz = [ncu_value(k.get(NCU_CLOCK), UNIT_MHZ) for k in call]
        if None in seconds:
            return {"error": f"unreadable {NCU_TIME}: {call[0].get(NCU_TIME)}"}
        calls_s.append(sum(seconds))
        if None not in mhz:  # the call's clock, weighted by its kernels' times
            clocks.append(sum(s * f for s, f in zip(seconds, mhz, strict=True)) / sum(seconds))
    return {
        "median_s": statistics.median(calls_s),
        "calls_s": calls_s,
        "clock_mhz": statistics.median(clocks) if clocks else None,
        "kernels_per_call": per_call,
        "kernel": segment[0]["kernel"][:120],
    }


def ncu_cases(ncu: dict[str, Any], names: list[str]) -> dict[str, dict[str, Any]]:
    """{cache: {case: numbers}} from the raw launches, so a parsing fix needs no GPU run."""
    out = {}
    for cache in NCU_CACHE:
        raw = ncu.get(cache, {})
        out[cache] = split_cases(raw["launches"], names) if "launches" in raw else raw
    return out


def ncu_errors(found: dict[str, Any]) -> list[str]:
    errors = [found["error"]] if isinstance(found.get("error"), str) else []
    cases = [(name, v) for name, v in found.items() if isinstance(v, dict) and "error" in v]
    return errors + [f"{name}: {v['error']}" for name, v in cases]
