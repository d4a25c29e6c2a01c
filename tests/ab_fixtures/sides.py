"""A fake side runner for the `ab --resume` tests: complete results saved where a side
run writes them, and a side cut short where the test interrupts the A/B."""

from __future__ import annotations

from typing import Any

from ab_fixtures.build import results
from kernbench.ab.sides import SideRequest
from kernbench.results import model as results_io

# The bench the fake sides answer for: 2 cells, B 10 % slower, 3 sequential rounds.
BENCH = """\
name: fake-ab
description: a bench the fake side runner answers for
kernel: sleep
axes:
  size: [100, 400]
variants:
  fast: {work_us: 50}
  slow: {work_us: 100}
ab: {switch: KB_X, rounds: 3, schedule: sequential}
"""


class Sides:
    """Answers each side with complete results where B (switch KB_X=1) is 10 % slower,
    recording `provenance`; at the side named `stop`, leaves a run.json and raises
    KeyboardInterrupt. `ran`: the sides answered, in order."""

    def __init__(self, stop: str | None = None, provenance: dict[str, Any] | None = None) -> None:
        self.stop = stop
        self.provenance = provenance
        self.ran: list[str] = []

    def __call__(self, request: SideRequest) -> int:
        name = request.run.name
        if name == self.stop:
            (request.run_dir / "run.json").write_text("{}")  # a side cut short
            raise KeyboardInterrupt
        self.ran.append(name)
        slow = request.env["KB_X"] == "1"
        made = results(name, request.run.round,
                       lambda run, variant, size: size * 1e-6 * (1.1 if slow else 1.0),
                       provenance=self.provenance)
        results_io.save(made.model_copy(update={"complete": True}),
                        request.run_dir / "results.json")
        return 0
