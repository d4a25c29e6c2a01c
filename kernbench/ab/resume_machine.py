"""`ab --resume` on this machine: the sides it keeps were measured somewhere, and the sides
it runs are measured here. Another device model is refused (without --force), before any
side runs; another GPU of the model, driver or commit is said in one line, as `summarize`
would warn of it afterwards (docs/adr/0023-interrupted-ab-and-chosen-cells.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernbench.ab.failures import RunOutcome
from kernbench.ab.measured_on import compare, facts
from kernbench.ab.schedule import AbManifest
from kernbench.errors import UserError
from kernbench.execute.gpus import visible_gpus_and_driver
from kernbench.render.measured_on import not_alike
from kernbench.results.ab import MEASURED_FACTS
from kernbench.results.provenance import collect_host

HERE = "this resume"  # how the sides to run are named beside the kept ones
NO_GPU = "no CUDA GPU"


def check_machine(manifest: AbManifest, kept: Mapping[str, RunOutcome], force: bool,
                  echo: Callable[[str], None]) -> None:
    """Refuse a resume whose kept sides (their outcomes by run name) measured another
    device model (unless `force`); say what else differs. Facts a kept side or this
    machine did not record are skipped."""
    by_run = {run.name: facts(results.provenance) for run in manifest.runs
              if run.name in kept and (results := kept[run.name].results) is not None}
    if not by_run:
        return
    by_run[HERE] = facts(this_machine(manifest.device))
    names = [name for name in MEASURED_FACTS
             if all(found[name] is not None for found in by_run.values())]
    found = compare(by_run, names)
    if not found.differing:
        return
    models = found.differing.get("device_name")
    if models and not force:
        recorded = " and ".join(str(group.value) for group in models if HERE not in group.runs)
        raise UserError(
            f"--resume: the sides kept were measured on {recorded}, this machine's device is "
            f"{by_run[HERE]['device_name']}: their verdicts would mix two machines; --force "
            f"resumes anyway, or start a new A/B")
    runs = [run for run in manifest.runs if run.name in by_run]
    echo(f"note: resuming on this machine: {not_alike(found, runs)}")


def this_machine(device: str) -> dict[str, Any]:
    """The provenance the sides run here will record, as far as it is known without a
    CUDA context in this process (the sides measure that GPU): nvidia-smi names it."""
    found = collect_host(device)
    if device == "cuda":
        try:
            gpus, driver = visible_gpus_and_driver()
        except UserError:
            gpus, driver = [], None
        found["device_name"] = gpus[0].name if gpus else NO_GPU
        found["gpu_uuid"] = gpus[0].uuid if gpus else None
        found["driver"] = driver if gpus else None
    return found

