"""Where an A/B's side runs measured: the machine and code their results' provenance
recorded, and the facts they did not share (docs/adr/0021-ab-json-format.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.ab.failures import RunOutcome
from kernbench.ab.schedule import AbManifest
from kernbench.results.ab import MEASURED_FACTS, MeasuredOn, RunsWithValue
from kernbench.results.provenance import recorded_git


def measured_on(manifest: AbManifest, outcomes: Mapping[str, RunOutcome]) -> MeasuredOn:
    """The facts every run that left results shares; those they do not, in `differing`."""
    return compare({run.name: facts(outcome.results.provenance)
                    for run in manifest.runs
                    if (outcome := outcomes.get(run.name)) is not None
                    and outcome.results is not None})


def compare(by_run: Mapping[str, Mapping[str, Any]],
            names: Sequence[str] = MEASURED_FACTS) -> MeasuredOn:
    """The facts `names` that all of `by_run` (each run's `facts`) share; those they do
    not, in `differing`."""
    shared: dict[str, Any] = {}
    differing: dict[str, list[RunsWithValue]] = {}
    for name in names:
        runs_of: dict[Any, list[str]] = {}
        for run, recorded in by_run.items():
            runs_of.setdefault(recorded[name], []).append(run)
        if len(runs_of) > 1:
            differing[name] = [RunsWithValue(value=value, runs=runs)
                               for value, runs in runs_of.items()]
        else:
            shared[name] = next(iter(runs_of), None)
    return MeasuredOn(**shared, runs=list(by_run), differing=differing)


def facts(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The measured-on facts of one run's provenance; None where it recorded none."""
    git = recorded_git(provenance)
    found: dict[str, Any] = {name: _text(provenance.get(name)) for name in MEASURED_FACTS}
    found["commit"] = _text(git.get("commit"))
    dirty = git.get("dirty")
    found["dirty"] = dirty if isinstance(dirty, bool) else None
    return found


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
