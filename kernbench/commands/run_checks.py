"""What must hold before a run measures: a folder of its own to write in, `--gpus` that
this machine has, over several hosts cells that are each one job of all their ranks, and
on `--resume` the kernel's module it started with. (What the bench `requires:` of the
machine is `execute.requirements`, which `ab` checks too.)"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kernbench.errors import UserError
from kernbench.execute.gpus import choose_gpus, visible_gpus
from kernbench.execute.hosts import Hosts
from kernbench.execute.lock import LOCK_NAME
from kernbench.execute.options import RunOptions, holds_a_run
from kernbench.execute.pins import bench_source_hash
from kernbench.plan import Cell
from kernbench.results import model as results_io
from kernbench.results.atomic import is_temporary_of, temporary_target
from kernbench.results.kinds import RESULTS_NAME, RUN_JSON_NAME
from kernbench.spec import hardware
from kernbench.spec.checks import world_size_of
from kernbench.spec.models import Bench
from kernbench.spec.op_factory import bench_source
from kernbench.worker_env import SIDE_LOG_ENV


def reachable(out: Path, option: str) -> Path:
    """`out`, which may not exist yet, but whose name the system takes: one too long, or
    below a folder that cannot be searched, is one line, not a traceback where it is
    first looked at."""
    try:
        os.stat(out)
    except (FileNotFoundError, NotADirectoryError):
        pass  # made by the run; a file above it is check_out's to say
    except OSError as exc:
        raise UserError(f"{option}: {out}: {exc.strerror or exc}") from None
    return out


def check_out(out: Path) -> None:
    """A new run's folder: one kernbench can write, new or empty, so that no file of
    someone else's is overwritten (as `kernbench ab --out` asks)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} is a file; give a folder")
    if holds_a_run(out):
        if run_finished(out):
            raise UserError(f"--out: {out} holds a finished run; choose another --out")
        raise UserError(f"--out: {out} already holds a run; use --resume {out} to finish it")
    if (out / RESULTS_NAME).exists():
        raise UserError(
            f"--out: {out} holds a {RESULTS_NAME} that no run there wrote (no {RUN_JSON_NAME});"
            " give a new folder"
        )
    if out.is_dir() and any(_stranger(p) for p in out.iterdir()):
        raise UserError(f"--out: {out} is not empty; give a new folder")
    existing = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"--out: {existing} is a file; give a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"--out: {existing}: cannot write there (permission denied)")


def run_finished(folder: Path) -> bool:
    """Whether the run in `folder` wrote its results complete: a resume has nothing left
    to measure. Results that do not read (damaged, newer) say nothing of the kind."""
    try:
        return results_io.load(folder / RESULTS_NAME).complete
    except UserError:
        return False


def check_fast_out(out: Path, figures: str) -> None:
    """Fast mode's folder: new, empty, or one it drew before (only its `figures` folder of
    .png and .json files), which it redraws: scripts time fast mode into one folder again and
    again. A run's folder is refused above all (its figures would be replaced by the
    committed data's, beside the results they no longer show), and any other file."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} is a file; give a folder")
    if holds_a_run(out) or (out / RESULTS_NAME).exists():
        raise UserError(f"--out: {out} holds a run; fast mode would draw the committed data "
                        "over its figures: give a new folder")
    drawn = out / figures
    strangers = [p for p in out.iterdir() if p != drawn] if out.is_dir() else []
    if drawn.is_dir():
        strangers += [p for p in drawn.iterdir() if not _drawn_by_fast_mode(p)]
    elif drawn.exists():
        strangers.append(drawn)
    if strangers:
        raise UserError(f"--out: {out} holds {strangers[0].relative_to(out)}, which fast mode "
                        "did not draw; give a new folder")


def _drawn_by_fast_mode(path: Path) -> bool:
    """A figure or its data, or the temporary of one that a kill -9 left as it was written
    (the next fast mode writes over neither, and refuses no folder for it)."""
    name = temporary_target(path) or path.name
    return path.is_file() and Path(name).suffix in (".png", ".json")


def _stranger(path: Path) -> bool:
    """A file a new run's folder may not hold. It may hold its lock (the run checks the
    folder again under it, and a run refused there leaves it), the log a sequential A/B's
    runner opened there and named in KERNBENCH_SIDE_LOG, and a temporary of run.json that
    a run killed as it saved its options left (the new run writes run.json over it)."""
    log = os.environ.get(SIDE_LOG_ENV)
    mine = {LOCK_NAME} | ({Path(log).name} if log and Path(log).resolve().parent
                          == path.parent.resolve() else set())
    return path.name not in mine and not is_temporary_of(path, RUN_JSON_NAME)


def check_world_sizes(hosts: Hosts, cells: Sequence[Cell]) -> None:
    """Over several hosts every cell must be one job of all their ranks."""
    others = sorted({world_size_of(c.params) for c in cells} - {hosts.world_size})
    if others:
        raise UserError(
            f"--nnodes {hosts.nnodes} x --nproc-per-node {hosts.nproc_per_node} start "
            f"{hosts.world_size} ranks, but the plan has cells of world_size "
            f"{', '.join(map(str, others))}; select the others with "
            f"--only world_size={hosts.world_size}"
        )


def check_kernel_unchanged(options: RunOptions, bench: Bench) -> None:
    """A resume times the kernel the run started with: the journal holds its rounds."""
    if options.kernel_source is None:
        return
    if bench_source_hash(bench, options.bench_path.parent) != options.kernel_source:
        path = bench_source(bench, options.bench_path.parent)
        raise UserError(f"--resume: {path or bench.kernel_name} changed since the run started "
                        "(the kernel it measures); start a new run, or restore it")


def checked_gpus(gpus: str | None, force: bool, device: str, hosts: Hosts | None) -> str | None:
    """--gpus N|all, checked against the device, the hosts and this machine's GPUs."""
    if gpus is None:
        if force:
            raise UserError("--force: only with --gpus, to accept GPUs of different models")
        return None
    if hosts is not None:
        raise UserError("--gpus: not with --nnodes (a collective's ranks take one GPU each)")
    if hardware.resolve_device(device) != "cuda":
        raise UserError("--gpus: a worker per GPU needs --device cuda")
    choose_gpus(gpus, visible_gpus(), force)  # a bad count: before measuring
    return gpus
