"""The files a results reader may be handed by mistake, told apart from results.

A run's folder also holds `run.json`, an A/B's folder `ab.json` and `ab-run.json`, and a
bench is a YAML file: given to `render`, `report`, `export` or `compare`, each would fail
on the first field results have and it lacks. `refuse_folder` and `refuse_data` name
what was given instead, and what to give. The folders' file names are declared here,
below the stages that write them, so the results reader and every writer share them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernbench.errors import UserError
from kernbench.spec.models import YAML_SUFFIXES

RESULTS_NAME = "results.json"  # a run's results (kernbench.results.model)
RUN_JSON_NAME = "run.json"  # a run's options (kernbench.execute.options)
AB_JSON_NAME = "ab.json"  # an A/B's verdicts (kernbench.results.ab)
AB_MANIFEST_NAME = "ab-run.json"  # an A/B's settings and sides (kernbench.ab.schedule)
REPORT_MD = "report.md"  # a run's or an A/B's report (kernbench.render.report, .outputs)
REPORT_HTML = "report.html"  # its self-contained HTML twin


def refuse_folder(folder: Path) -> None:
    """Refuse a folder without results that is an A/B's or a run's, saying what it is."""
    if any((folder / name).is_file() for name in (AB_MANIFEST_NAME, AB_JSON_NAME)):
        raise UserError(_an_ab(folder, f"{folder}: an A/B's folder, not a run's"))
    if (folder / RUN_JSON_NAME).is_file():
        raise UserError(f"{folder}: a run without a {RESULTS_NAME} (cut short?); "
                        f"`kernbench collect {folder}` builds it from the journal")


def refuse_bench_file(path: Path) -> None:
    if path.suffix.lower() in YAML_SUFFIXES and path.is_file():
        raise UserError(f"{path}: a bench file, not results; "
                        f"`kernbench run --bench {path}` measures it")


def refuse_data(path: Path, data: Any) -> None:
    """Refuse JSON that is an A/B's file or a run's options: keys results never have."""
    if not isinstance(data, dict):
        return
    if "switch" in data:
        raise UserError(_an_ab(path.parent, f"{path}: an A/B's file, not a run's results"))
    if "bench_path" in data and "pins_mode" in data:
        raise UserError(f"{path}: a run's options ({RUN_JSON_NAME}), not its results; "
                        f"give the run folder ({path.parent}) or its {RESULTS_NAME}")


def _an_ab(folder: Path, what: str) -> str:
    return (f"{what}; its report is {folder / REPORT_MD} "
            f"(`kernbench summarize {folder}` rebuilds it)")
