"""`kernbench run --gpus N|all`: the GPUs chosen, the cells dealt, and (with fake GPUs on
the CPU) a round's cells measured by one worker per GPU at once."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands.run import measure
from kernbench.errors import EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute import measure_run
from kernbench.execute.gpus import (
    choose_gpus,
    deal,
    estimator,
    lanes,
    parse_listing,
    restrict,
)
from kernbench.execute.pins import PinStore, load_pins
from kernbench.execute.run_folder import RunFolder
from kernbench.plan import Cell
from kernbench.results import model as results_io
from kernbench.results.model import GpuId, RoundResult
from kernbench.spec.loader import load_bench
from kernbench.worker_env import GPU_ENV
from tests.test_options import options_for, tiny_bench

LISTING = """\
0, NVIDIA H200, GPU-aaaa-0000, 570.86.15
1, NVIDIA H200, GPU-bbbb-1111, 570.86.15
2, NVIDIA A100-SXM4-80GB, GPU-cccc-2222, 570.86.15
"""
FOUND, DRIVER = parse_listing(LISTING)


def cells(*times: float) -> tuple[list[Cell], dict[int, float]]:
    made = [Cell(index=i, variant="v", axes={"n": i}, params={"n": i}) for i in range(len(times))]
    return made, dict(enumerate(times))


def test_cells_are_dealt_longest_first_to_the_least_loaded_gpu() -> None:
    made, time_of = cells(1, 8, 3, 3, 2, 7)
    hands = deal(made, lambda c: time_of[c.index], 2)
    loads = [sum(time_of[c.index] for c in hand) for hand in hands]
    assert sorted(loads) == [12, 12]
    assert sorted(c.index for hand in hands for c in hand) == list(range(6))
    for hand in hands:  # each GPU keeps the round's order
        assert [c.index for c in hand] == sorted(c.index for c in hand)


def test_more_gpus_than_cells_leaves_some_idle() -> None:
    made, _ = cells(1, 1)
    hands = deal(made, lambda c: 1.0, 4)
    assert [len(hand) for hand in hands] == [1, 1, 0, 0]
    with pytest.raises(ValueError):
        deal(made, lambda c: 1.0, 0)


def test_a_cell_is_estimated_from_its_earlier_rounds() -> None:
    made, _ = cells(0, 0, 0)
    measured = {0: [RoundResult(round=1, status="ok", wall_s=w) for w in (4.0, 2.0, 9.0)],
                1: [RoundResult(round=1, status="failed", wall_s=0.0)]}
    estimate = estimator(measured, default_s=1.5)
    assert [estimate(c) for c in made] == [4.0, 1.5, 1.5]


def test_the_listing_gives_each_gpu_and_the_hosts_driver() -> None:
    assert [(g.index, g.name, g.uuid) for g in FOUND[1:]] == [
        ("1", "NVIDIA H200", "GPU-bbbb-1111"), ("2", "NVIDIA A100-SXM4-80GB", "GPU-cccc-2222")]
    assert DRIVER == "570.86.15"
    assert parse_listing("") == ([], None)


def test_cuda_visible_devices_restricts_the_gpus_in_its_order() -> None:
    assert restrict(FOUND, None) == FOUND
    assert [g.index for g in restrict(FOUND, "2,0")] == ["2", "0"]
    assert [g.index for g in restrict(FOUND, "GPU-bbbb")] == ["1"]  # a UUID prefix
    assert [g.index for g in restrict(FOUND, "1,7,0")] == ["1"]  # CUDA stops at a bad one
    assert FOUND[0] == GpuId(index="0", name="NVIDIA H200", uuid="GPU-aaaa-0000")


@pytest.mark.parametrize(("wanted", "message"), [
    ("4", "--gpus: 4 GPUs asked for, this machine shows 3"),
    ("0", "--gpus: '0' is not a number of GPUs"),
    ("most", "--gpus: 'most' is not a number of GPUs"),
    ("all", "--gpus: the GPUs are of different models (NVIDIA A100-SXM4-80GB, NVIDIA H200)"),
])
def test_gpus_that_cannot_be_used_are_one_line(wanted: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        choose_gpus(wanted, FOUND, mixed_ok=False)
    assert caught.value.message.startswith(message)


def test_gpus_of_one_model_or_forced() -> None:
    assert [g.index for g in choose_gpus("2", FOUND, mixed_ok=False)] == ["0", "1"]
    assert len(choose_gpus("all", FOUND, mixed_ok=True)) == 3
    with pytest.raises(UserError, match="shows no GPU"):
        choose_gpus("all", [], mixed_ok=False)


@pytest.mark.parametrize(("argv", "message"), [
    (["--gpus", "2", "--device", "cpu"], "--gpus: a worker per GPU needs --device cuda"),
    (["--force", "--device", "cpu"], "--force: only with --gpus"),
])
def test_gpus_flags_that_do_not_fit_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    bench = tiny_bench(tmp_path / "b")
    result = CliRunner().invoke(cli.app, ["run", "--bench", str(bench), "--out",
                                          str(tmp_path / "out"), *argv])
    assert result.exit_code == EXIT_USAGE and result.output.strip().startswith(message)
    assert len(result.output.strip().splitlines()) == 1


def test_concurrent_workers_keep_every_pin(tmp_path: Path) -> None:
    path = tmp_path / "pins" / "run.json"

    def record(key: str) -> None:
        PinStore(write=[path]).record(key, {"k": 1}, {"BLOCK": 64}, [])

    threads = [threading.Thread(target=record, args=(f"key{i}",)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(load_pins(path)) == sorted(f"key{i}" for i in range(16))


GPU_OF_CELL = '''
import os
def make(n, **_):
    with open(os.environ["KB_SEEN"] + f"/{n}-{os.environ['KERNBENCH_ROUND']}", "w") as out:
        out.write(os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    return lambda: sum(range(n))
'''


@pytest.mark.slow
def test_a_round_runs_one_worker_per_gpu(tmp_path, monkeypatch) -> None:
    """Fake GPUs on the CPU: the lanes, their logs and the GPU of each round result."""
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "seen.py").write_text(GPU_OF_CELL)
    bench_path = folder / "spread.yaml"
    bench_path.write_text(textwrap.dedent("""\
        name: spread
        description: cells over two fake GPUs
        kernel: seen:make
        axes: {n: [1, 2, 3, 4, 5, 6]}
        timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}
        rounds: 2
        """))
    seen = tmp_path / "seen"
    seen.mkdir()
    monkeypatch.setenv("KB_SEEN", str(seen))
    monkeypatch.setattr(measure_run, "visible_gpus", lambda: FOUND[:2])
    options = options_for(bench_path, rounds=2, gpus="all",
                          project_pins=bench_path.parent / "pins" / "spread.json")
    out = tmp_path / "out"
    assert measure(RunFolder(options, load_bench(bench_path), out)) == EXIT_OK
    results = results_io.load(out / "results.json")
    used = set()
    for cell in results.cells:
        assert cell.status == "ok" and len(cell.rounds) == 2
        for measured in cell.rounds:
            assert measured.gpu is not None and measured.gpu.name == "NVIDIA H200"
            visible = (seen / f"{cell.params['n']}-{measured.round}").read_text()
            assert visible == measured.gpu.index  # the worker saw that GPU alone
            used.add(measured.gpu.uuid)
    assert used == {"GPU-aaaa-0000", "GPU-bbbb-1111"}
    assert {p.name for p in (out / "logs").iterdir()} == {
        f"r{r}.gpu{g}.log" for r in (1, 2) for g in (0, 1)}


def test_lanes_name_their_gpu_for_the_worker() -> None:
    first, second = lanes(FOUND[:2])
    assert (first.slot, second.slot) == ("gpu0", "gpu1")
    env = second.env()
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    assert GpuId.model_validate_json(env[GPU_ENV]) == FOUND[1]
