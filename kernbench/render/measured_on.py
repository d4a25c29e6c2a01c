"""Where and with what an A/B measured, in the one wording its report.md, report.html,
ab.png footnote and closing lines share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kernbench.results.ab import AbReport, MeasuredOn
from kernbench.results.provenance import code_label

# How a fact is named where the runs did not share it.
FACT_NAMES = {
    "device_name": "device", "gpu_uuid": "GPU UUID", "driver": "driver", "cuda": "CUDA",
    "torch": "torch", "triton": "triton", "kernbench": "kernbench version",
    "commit": "commit", "dirty": "tree state", "host": "host",
}
# The facts shown as `NAME VALUE` after the device, in this order, where recorded.
LABELLED = ("driver", "cuda", "torch", "triton", "host")
CODE_FACTS = ("kernbench", "commit", "dirty")
NOT_RECORDED = "not recorded"


class NamedRun(Protocol):
    """A side run by its name and round: an ab.json's record, or an ab-run.json's plan."""

    @property
    def name(self) -> str: ...

    @property
    def round(self) -> int: ...


@dataclass(frozen=True)
class WhereMeasured:
    machine: str  # "NVIDIA H200 (GPU-…), driver 580.159.04, CUDA 13.0, …, host vm"
    code: str  # "kernbench 0.1.0 @ 6f85bdfaf6 (dirty)"
    warning: str | None  # the facts the runs did not share, each value with its runs
    short_warning: str | None  # the same for a figure's footnote: the facts alone


def where_measured(report: AbReport) -> WhereMeasured:
    found = report.measured_on
    if found is None:
        return WhereMeasured(
            f"{report.device} ({NOT_RECORDED}: ab.json is older than version 6; "
            "`kernbench summarize` reads the machine from the side runs)",
            f"kernbench {NOT_RECORDED}", None, None)
    if not found.runs:
        return WhereMeasured(f"{report.device} (no side run left results to say more)",
                             f"kernbench {NOT_RECORDED}", None, None)
    if not found.differing:
        return WhereMeasured(_machine(report, found), _code(found), None, None)
    names = ", ".join(FACT_NAMES[name] for name in found.differing)
    left_results = set(found.runs)
    measured = [run for run in report.runs if run.name in left_results]
    return WhereMeasured(_machine(report, found), _code(found), not_alike(found, measured),
                         f"WARNING: the runs differ in {names} (see report.md)")


def not_alike(found: MeasuredOn, runs: Sequence[NamedRun]) -> str:
    """The facts the runs did not share, each value with the runs (of `runs`) it held."""
    differences = "; ".join(
        f"{FACT_NAMES[name]} " + " and ".join(
            f"{_value(name, group.value)} in {runs_text(group.runs, runs)}"
            for group in groups)
        for name, groups in found.differing.items())
    return (f"the side runs were not measured alike ({differences}): their deltas mix "
            "the switch's effect with that difference")


def _machine(report: AbReport, found: MeasuredOn) -> str:
    device = _shown(found, "device_name") or f"{report.device} (model {NOT_RECORDED})"
    if report.device == "cuda":
        device += f" ({_shown(found, 'gpu_uuid') or f'UUID {NOT_RECORDED}'})"
    parts = [f"{FACT_NAMES[name]} {value}" for name in LABELLED
             if (value := _shown(found, name))]
    return ", ".join([device, *parts])


def _shown(found: MeasuredOn, name: str) -> str | None:
    if name in found.differing:
        return f"{FACT_NAMES[name]} differs between runs"
    value = getattr(found, name)
    return None if value is None else str(value)


def _code(found: MeasuredOn) -> str:
    if any(name in found.differing for name in CODE_FACTS):
        return "kernbench code differs between runs"
    git = {"commit": found.commit, "dirty": found.dirty} if found.commit else {}
    return code_label({"kernbench": found.kernbench, "git": git})


def _value(name: str, value: str | bool | None) -> str:
    if value is None:
        return NOT_RECORDED
    if name == "dirty":
        return "dirty" if value else "clean"
    return str(value)[:10] if name == "commit" else str(value)


def runs_text(names: Sequence[str], runs: Sequence[NamedRun]) -> str:
    """`names` by whole rounds where they hold every run of one in `runs` (those that left
    results), e.g. 'rounds 1-2, r3_A, r3_B'."""
    chosen = set(names)
    rounds: dict[int, list[str]] = {}
    for run in runs:
        rounds.setdefault(run.round, []).append(run.name)
    parts: list[str] = []
    span: list[int] = []
    for k, members in sorted(rounds.items()):
        if set(members) <= chosen:
            span.append(k)
            continue
        parts += [_span(span)] if span else []
        span = []
        parts += [name for name in members if name in chosen]
    parts += [_span(span)] if span else []
    listed = {name for members in rounds.values() for name in members}
    return ", ".join(parts + [name for name in names if name not in listed])


def _span(rounds: list[int]) -> str:
    return f"round {rounds[0]}" if len(rounds) == 1 else f"rounds {rounds[0]}-{rounds[-1]}"

