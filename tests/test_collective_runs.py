"""Multi-rank benches through the real runner: a dying rank, and an A/B of a CCL bench."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_FAILED, EXIT_OK
from kernbench.results import model as results_io

pytestmark = pytest.mark.slow

DYING = '''
import os
from kernbench.kernels.collective import make as collective

def make(**params):
    kernel = collective(**params)
    if params["bytes"] == 2048 and os.environ.get("RANK") == "1":
        def die_mid_cell(count, reps, duty="sustained"):
            os._exit(9)  # rank 1 dies while rank 0 waits in the collective

        kernel.ranks.time_batches = die_mid_cell
    return kernel
'''


def write_bench(folder: Path, kernel: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "ccl.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: ccl-small
        description: two gloo ranks
        kernel: {kernel}
        axes:
          op: [allreduce]
          world_size: [2]
          bytes: [1024, 2048, 4096]
          inplace: [true]
          dtype: [fp32]
        metrics:
          bytes: bytes
        timer: {{warmup_s: 0.0, budget_s: 0.05, min_samples: 3, cell_timeout_s: 60}}
        requires: {{world_size: 2}}
        """) + extra)
    return bench


def test_a_rank_killed_mid_cell_fails_that_cell_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "dying.py").write_text(DYING)
    bench = write_bench(tmp_path / "b", "dying:make")
    started = time.monotonic()
    code = run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu"))
    assert time.monotonic() - started < 120
    assert code == EXIT_FAILED
    cells = {c.params["bytes"]: c for c in results_io.load(tmp_path / "out/results.json").cells}
    # Rank 0 either sees its peer vanish inside the collective (and says so), or is torn
    # down by the launcher first (and the runner names the dead rank).
    reason = cells[2048].reason or ""
    assert cells[2048].status == "failed"
    assert "remote worker" in reason or "rank 1" in reason, reason
    # The broken group is not reused: the next cell gets fresh ranks and succeeds.
    assert cells[1024].status == "ok" and cells[4096].status == "ok"
    assert cells[4096].metrics["busbw_gbs"] > 0


def test_a_collective_bench_runs_under_ab(tmp_path: Path) -> None:
    from kernbench.ab.run import run_ab

    bench = write_bench(tmp_path / "b", "collective")
    outcome = run_ab(str(bench), switch="KB_CCL_NOOP", rounds=2, out=tmp_path / "ab",
                     device="cpu", echo=lambda line: None)
    assert outcome.exit_code == EXIT_OK
    report = json.loads((tmp_path / "ab" / "ab.json").read_text())
    assert len(report["cells"]) == 3 and report["failed_variants"] == {}
    assert all(cell["verdict"] in ("same", "unstable", "faster", "slower")
               for cell in report["cells"])
    assert all(len(cell["round_deltas_pct"]) == 2 for cell in report["cells"])
    side_b = json.loads((tmp_path / "ab" / "r1_B" / "results.json").read_text())
    assert side_b["provenance"]["environment"]["KB_CCL_NOOP"] == "1"  # the switch, recorded
