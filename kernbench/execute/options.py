"""The options of a run, declared once: the model that *is* the run folder's `run.json`.

`kernbench run` builds a `RunOptions` from its command line, writes it as `run.json`
before the first cell, and `--resume DIR` reads it back; an A/B side's command line is
`to_argv()` of the options that side should run with. The bench itself is not stored:
it is loaded from `bench_path`, and `spec_hash` says whether it changed since.

Format history (bump RUN_JSON_VERSION and add a step to RUN_JSON's `update_to`):
  0: written before versions: the same keys, without `schema_version` and `figures`.
  1: `schema_version` and `figures` (a resumed run draws what its first start would);
     later `save_pins` and `hardware`, with defaults, so files without them still read
     as version 1 (no bump: every version-1 file validates, and means what it meant);
     later `spec`, the bench as measured (None in older files: such a run resumes only
     under an unchanged bench); later `hosts` (None: one host), `gpus` and `force`;
     later `cells` (None: every cell chosen); later `kernel_source` (None: not recorded).
     Later `bench_path`, `pins`, `project_pins` and `timers` relative to the project when
     the run's folder lies in it, found from that folder (results/folder_paths.py; no
     bump: committed version-1 files already held such paths, and absolute ones still
     read as they are).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from kernbench.execute.hosts import Hosts
from kernbench.execute.pins import PinMode
from kernbench.results.folder_paths import recorded_path, resolved_path
from kernbench.results.jsonio import FileFormat
from kernbench.results.kinds import RUN_JSON_NAME
from kernbench.results.provenance import utc_now
from kernbench.spec.fields import FiniteMapping, Strict

RUN_JSON_VERSION = 1


class RunOptions(Strict):
    """What a run measures and how; the same before a kill -9 and after `--resume`."""

    schema_version: int = RUN_JSON_VERSION
    # Absolute here; run.json keeps it (and the other paths) as `folder_paths` records them.
    bench_path: Path
    spec_hash: str  # of the bench when the run started: a changed bench is not resumed
    device: Literal["cpu", "cuda"]
    rounds: int = Field(ge=1)
    first_round: int = Field(1, ge=1)  # A/B sides number their one round each
    pins: Path | None = None  # replay (or record into) this file instead of the defaults
    pins_mode: PinMode = "auto"
    timers: Path | None = None  # {cell id: timer} to time cells with (execute/cell_timers.py)
    project_pins: Path | None = None  # the bench's committed pins file, used without `pins`
    # Also write the pins recorded into `project_pins`; else they stay in the run's folder.
    save_pins: bool = False
    hardware: str | None = None  # the hardware profile's name, over the bench's `hardware:`
    side: str = ""  # KERNBENCH_SIDE: set by the A/B runner, through the environment
    figures: bool = True
    only: tuple[str, ...] = ()  # cell filters, KEY=V1[,V2]
    # Of those, the cells with these plan indices: an A/B of the variant's side runs its
    # variant's cells that have a twin on the other side (ab/pairing.py).
    cells: tuple[int, ...] | None = None
    shard: str | None = None  # "I/N": this run measures every N-th selected cell
    # Each round's cell order is shuffled from this seed (plan.round_order); None: plan order.
    order_seed: int | None = None
    created_utc: str = Field(default_factory=utc_now)
    # The bench as it was measured (`Bench.model_dump`): a resume or a collect after a
    # change to what is only computed from the measurements (metrics, hardware) is told
    # apart from a change to what was measured.
    spec: FiniteMapping | None = None
    hosts: Hosts | None = None  # a run over several hosts: this one's place among them
    gpus: str | None = None  # "N" or "all": a worker per GPU, the cells dealt out
    force: bool = False  # with gpus: GPUs of different models too
    # The hash of the kernel's (or the op's) own module as the run started: a resume
    # refuses to time another version of it. None: a library's op, or not recorded.
    kernel_source: str | None = None

    @field_validator("cells")
    @classmethod
    def _some_cell(cls, cells: tuple[int, ...] | None) -> tuple[int, ...] | None:
        # `--cells` cannot give none; a hand-edited run.json can, and would otherwise be
        # refused as an empty plan, at the bench's `exclude:`.
        if cells == ():
            raise ValueError("an empty list chooses no cell; leave it null for every cell")
        return cells

    @model_validator(mode="after")
    def _one_pins_source(self) -> RunOptions:
        # The command line names `pins`, or leaves the bench's own file to be used:
        # either way to_argv() can say which.
        if (self.pins is None) == (self.project_pins is None):
            raise ValueError("give exactly one of pins and project_pins")
        if self.save_pins and self.project_pins is None:
            raise ValueError("save_pins writes project_pins: give project_pins, not pins")
        return self

    @property
    def rounds_range(self) -> range:
        """The round numbers this run measures."""
        return range(self.first_round, self.first_round + self.rounds)

    def to_argv(self, out: Path) -> list[str]:
        """The `kernbench run` arguments that start a run with these options in `out`.

        `side` travels in KERNBENCH_SIDE, as the A/B runner sets it; `created_utc` is the
        time the run starts, and `spec_hash` that of the bench it then finds."""
        argv = [
            "--bench", str(self.bench_path),
            "--out", str(out),
            "--device", self.device,
            "--rounds", str(self.rounds),
            "--first-round", str(self.first_round),
            "--pins-mode", self.pins_mode,
            "--figures" if self.figures else "--no-figures",
        ]  # fmt: skip
        if self.pins is not None:
            argv += ["--pins", str(self.pins)]
        if self.save_pins:
            argv += ["--save-pins"]
        if self.timers is not None:
            argv += ["--timers", str(self.timers)]
        if self.hardware is not None:
            argv += ["--hardware", self.hardware]
        for selection in self.only:
            argv += ["--only", selection]
        if self.cells is not None:
            argv += ["--cells", ",".join(map(str, self.cells))]
        if self.shard is not None:
            argv += ["--shard", self.shard]
        argv += ["--order-seed", "plan" if self.order_seed is None else str(self.order_seed)]
        if self.hosts is not None:
            argv += self.hosts.to_argv()
        if self.gpus is not None:
            argv += ["--gpus", self.gpus] + (["--force"] if self.force else [])
        return argv

    def replace(self, **changes: Any) -> RunOptions:
        """A copy with `changes`, validated like the original."""
        return RunOptions.model_validate({**self.model_dump(), **changes})


def _from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    # Version 0 resumed with the figures of the --resume command line, drawn by default.
    return {**data, "figures": True}


RUN_JSON: FileFormat[RunOptions] = FileFormat(
    "run.json", RUN_JSON_VERSION, RunOptions, update_to={1: _from_unversioned}
)


def load_options(folder: Path) -> RunOptions:
    """The run.json of `folder`, its paths absolute."""
    return _with_paths(RUN_JSON.read(Path(folder) / RUN_JSON_NAME), resolved_path, folder)


def save_options(folder: Path, options: RunOptions) -> None:
    """`options` (its paths absolute) as run.json, its paths as `recorded_path` keeps them."""
    RUN_JSON.write(Path(folder) / RUN_JSON_NAME, _with_paths(options, recorded_path, folder))


PATH_FIELDS = ("bench_path", "pins", "project_pins", "timers")  # as folder_paths keeps them


def _with_paths(
    options: RunOptions, convert: Callable[[str, Path], str], folder: Path
) -> RunOptions:
    paths = {name: getattr(options, name) for name in PATH_FIELDS}
    return options.model_copy(update={
        name: Path(convert(str(path), folder)) for name, path in paths.items() if path is not None
    })


def holds_a_run(folder: Path) -> bool:
    return (Path(folder) / RUN_JSON_NAME).is_file()
