"""`kernbench run`: measure a bench (or, in fast mode, redraw its committed figures)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernbench.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UserError
from kernbench.execute.rounds import (
    MANIFEST,
    RunOptions,
    execute,
    spec_hash,
    utc_now,
    utc_stamp,
)
from kernbench.results import model as results_io
from kernbench.spec.hardware import resolve_device
from kernbench.spec.models import Bench, HardwareProfile

FAST_ENV = "MILESTONE_FAST"


@dataclass
class RunRequest:
    bench: str | None = None
    bench_dirs: Sequence[Path] = ()
    out: Path | None = None
    device: str = "auto"
    rounds: int | None = None
    first_round: int = 1
    fast: bool = False
    resume: Path | None = None
    pins: Path | None = None
    pins_mode: str | None = None
    figures: bool = True
    only: Sequence[str] = ()
    shard: str | None = None


def fast_requested(flag: bool) -> bool:
    return flag or os.environ.get(FAST_ENV, "") not in ("", "0")


def run(request: RunRequest) -> int:
    from kernbench.spec.discovery import find_bench

    if request.resume is not None:
        return resume(request.resume, figures=request.figures)
    if not request.bench:
        raise UserError("--bench: give a bench name (see `kernbench list`) or --resume DIR")
    bench, bench_path = find_bench(request.bench, request.bench_dirs)
    out = request.out or Path("runs") / bench.name / utc_stamp()
    if fast_requested(request.fast):
        return render_fast(bench, bench_path, out)
    device = resolve_device(request.device)
    _check_requirements(bench, bench_path, device)
    if request.pins_mode and request.pins_mode not in ("auto", "record", "replay"):
        raise UserError(f"--pins-mode: {request.pins_mode!r} is not one of auto, record, replay")
    if request.pins is not None and request.pins_mode != "record" and not request.pins.exists():
        raise UserError(f"--pins: {request.pins} does not exist")
    if out.exists() and (out / MANIFEST).exists():
        raise UserError(f"--out: {out} already holds a run; use --resume {out} to finish it")
    options = RunOptions(
        bench=bench,
        bench_path=bench_path,
        out_dir=out,
        device=device,
        rounds=request.rounds or bench.rounds,
        first_round=request.first_round,
        pins=request.pins,
        pins_mode=request.pins_mode or ("replay" if request.pins else "auto"),
        project_pins=None if request.pins else bench_path.parent / "pins" / f"{bench.name}.json",
        side=os.environ.get("KERNBENCH_SIDE", ""),
        figures=request.figures,
        only=list(request.only),
        shard=request.shard,
    )
    return measure(options)


def resume(out: Path, figures: bool = True) -> int:
    from kernbench.spec.loader import load_bench

    manifest_path = out / MANIFEST
    if not manifest_path.exists():
        raise UserError(f"--resume: {out} holds no run ({MANIFEST} not found)")
    manifest = json.loads(manifest_path.read_text())
    bench_path = Path(manifest["bench_path"])
    bench = load_bench(bench_path)
    if spec_hash(bench) != manifest["spec_hash"]:
        raise UserError(f"--resume: {bench_path} changed since the run started; start a new run")
    pins = manifest.get("pins")
    project_pins = manifest.get("project_pins")
    options = RunOptions(
        bench=bench,
        bench_path=bench_path,
        out_dir=out,
        device=manifest["device"],
        rounds=manifest["rounds"],
        first_round=manifest["first_round"],
        pins=Path(pins) if pins else None,
        pins_mode=manifest["pins_mode"],
        project_pins=Path(project_pins) if project_pins else None,
        side=manifest.get("side", ""),
        figures=figures,
        only=manifest.get("only", []),
        shard=manifest.get("shard"),
    )
    return measure(options)


def measure(options: RunOptions) -> int:
    interrupted = False
    try:
        cells = execute(options)
    except KeyboardInterrupt:
        interrupted = True
        from kernbench.execute.rounds import planned_cells

        cells = planned_cells(options)
    results = finish(options, cells, complete=not interrupted)
    if interrupted:
        print(
            f"interrupted: {sum(c.status != 'pending' for c in results.cells)} cells kept; "
            f"finish with: kernbench run --resume {options.out_dir}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return report(results, options.out_dir)


def finish(options: RunOptions, cells: list, complete: bool) -> results_io.Results:
    from kernbench.results import provenance
    from kernbench.results.build import build_results, collect

    profile = select_profile(options.bench, options.device)
    rounds = range(options.first_round, options.first_round + options.rounds)
    cell_results, pins, stale = collect(
        options.bench, cells, options.out_dir / "journal", list(rounds), profile
    )
    manifest = json.loads((options.out_dir / MANIFEST).read_text())
    results = build_results(
        options.bench, options.bench_path, manifest, cell_results, pins, stale,
        provenance.collect(options.device), profile, complete,
        utc_now() if complete else None,
    )
    results_io.save(results, options.out_dir / "results.json")
    if options.figures and complete and options.bench.figures:
        from kernbench.render import render_results

        render_results(results, options.out_dir / "figures", parallel=True)
    return results


def select_profile(bench: Bench, device: str) -> HardwareProfile | None:
    from kernbench.execute.rounds import device_model
    from kernbench.spec import hardware

    return hardware.select_profile(device_model(device), device, bench.hardware)


def report(results: results_io.Results, out_dir: Path) -> int:
    counts: dict[str, int] = {}
    for cell in results.cells:
        counts[cell.status] = counts.get(cell.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    print(f"{results.bench}: {len(results.cells)} cells ({summary})")
    for stale in results.stale_pins:
        print(f"stale pin re-tuned: {stale}", file=sys.stderr)
    bad = results.failed_cells()
    for cell in bad:
        print(f"  {cell.status}: {cell.id}: {cell.reason}", file=sys.stderr)
    print(f"results: {out_dir / 'results.json'}")
    return EXIT_FAILED if bad else EXIT_OK


def render_fast(bench: Bench, bench_path: Path, out: Path) -> int:
    """Redraw the figures from the bench's committed data file; runs no kernel."""
    from kernbench.render import render_results

    if not bench.data:
        raise UserError(f"{bench_path}: data: fast mode needs the bench's committed data file")
    data_path = (bench_path.parent / bench.data).resolve()
    if not data_path.exists():
        raise UserError(f"{bench_path}: data: {data_path} not found; run the bench first")
    results = results_io.load(data_path)
    drifted = spec_drift(results.spec, bench.model_dump(mode="json"))
    if drifted:
        print(f"note: {data_path.name} was measured with a different {', '.join(drifted)} "
              f"than {bench_path.name} now has; re-run the bench to refresh it", file=sys.stderr)
    written = render_results(results, out / "figures", bench.figures or None, parallel=True)
    print(f"{bench.name}: fast mode, {len(written)} figures from {data_path}")
    for path in written:
        print(f"  {path}")
    return EXIT_OK


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


# Bench fields that change what is measured; the others only change how it is shown.
PRESENTATION_FIELDS = ("description", "figures", "data", "ab")


def spec_drift(measured: dict, current: dict) -> list[str]:
    """The measurement fields of a bench that changed since its results were taken."""
    fields = (set(measured) | set(current)) - set(PRESENTATION_FIELDS)
    return sorted(f for f in fields if measured.get(f) != current.get(f))


def _check_requirements(bench: Bench, bench_path: Path, device: str) -> None:
    needed = bench.requires.device
    if needed != "any" and needed != device:
        raise UserError(f"{bench_path}: requires.device: the bench needs {needed}, not {device}")
    if device == "cuda" and not _cuda_available():
        raise UserError("--device: cuda asked for, but torch with a CUDA device is not here")
    if device == "cuda" and bench.requires.min_gpus > 1:
        import torch

        count = torch.cuda.device_count()
        if count < bench.requires.min_gpus:
            raise UserError(
                f"{bench_path}: requires.min_gpus: needs {bench.requires.min_gpus} GPUs, "
                f"this machine has {count}"
            )
