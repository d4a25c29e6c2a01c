"""Runs over several hosts: the flags, the launcher's command line, the world-size check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_USAGE, UserError
from kernbench.execute.host_channel import Order
from kernbench.execute.hosts import (
    HOST_NAMES_NAME,
    Hosts,
    default_rdzv_id,
    hosts_from_flags,
    load_host_names,
    save_host_names,
)
from kernbench.execute.launch import _parse, worker_argv
from tests.test_options import options_for, parsed_by_cli, same_options, tiny_bench

HOSTS = Hosts(nnodes=2, node_rank=1, nproc_per_node=2, endpoint="node0:29500", rdzv_id="job7")


def flags(**given: object) -> Hosts | None:
    args: dict[str, object] = {"nnodes": None, "node_rank": None, "nproc_per_node": None,
                               "endpoint": None, "rdzv_id": None, **given}
    return hosts_from_flags(**args, default_id="bench-abc")  # type: ignore[arg-type]


def test_one_host_unless_nnodes_says_more() -> None:
    assert flags() is None and flags(nnodes=1) is None
    hosts = flags(nnodes=2, node_rank=0, nproc_per_node=2, endpoint="127.0.0.1:29500")
    assert hosts is not None and hosts.world_size == 4 and hosts.leads
    assert hosts.rdzv_id == "bench-abc" and hosts.host_port == ("127.0.0.1", 29500)
    assert flags(nnodes=2, node_rank=1, nproc_per_node=1, endpoint="[::1]:80").host_port == (
        "::1", 80)


@pytest.mark.parametrize(("given", "message"), [
    ({"node_rank": 0}, "--node-rank: only with --nnodes N"),
    ({"endpoint": "h:1"}, "--rdzv-endpoint: only with --nnodes N"),
    ({"nnodes": 2, "nproc_per_node": 2, "endpoint": "h:1"}, "--node-rank: give this host's"),
    ({"nnodes": 2, "node_rank": 2, "nproc_per_node": 2, "endpoint": "h:1"},
     "--node-rank: 2 is not in 0..1 (--nnodes 2)"),
    ({"nnodes": 2, "node_rank": 0, "nproc_per_node": 2}, "--rdzv-endpoint: give HOST:PORT"),
    ({"nnodes": 2, "node_rank": 0, "endpoint": "h:1"}, "--nproc-per-node: give the ranks"),
    ({"nnodes": 2, "node_rank": 0, "nproc_per_node": 2, "endpoint": "h"}, "is not HOST:PORT"),
    ({"nnodes": 2, "node_rank": 0, "nproc_per_node": 2, "endpoint": "h:99999"},
     "is not HOST:PORT"),
    ({"nnodes": 2, "node_rank": 0, "nproc_per_node": 2, "endpoint": "h:1", "rdzv_id": "a b"},
     "--rdzv-id: 'a b'"),
])
def test_flags_that_do_not_fit_are_one_line(given: dict, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        flags(**given)


@pytest.mark.parametrize("argv", [
    ["--node-rank", "1"],
    ["--nnodes", "2", "--node-rank", "2", "--nproc-per-node", "1", "--rdzv-endpoint", "h:1"],
    ["--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "1", "--rdzv-endpoint", "h:x"],
    ["--nnodes", "0"],
])
def test_bad_host_flags_exit_2_with_one_line(tmp_path: Path, argv: list[str]) -> None:
    bench = tiny_bench(tmp_path / "b")
    result = CliRunner().invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu",
                                          "--out", str(tmp_path / "out"), *argv])
    assert result.exit_code == EXIT_USAGE, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_every_cell_must_span_every_host(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b")  # one-process cells: world_size 1
    result = CliRunner().invoke(cli.app, [
        "run", "--bench", str(bench), "--device", "cpu", "--out", str(tmp_path / "out"),
        "--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "2",
        "--rdzv-endpoint", "127.0.0.1:29500"])
    assert result.exit_code == EXIT_USAGE
    assert "start 4 ranks, but the plan has cells of world_size 1" in result.output


def test_the_hosts_round_trip_through_run_json_and_the_cli(tmp_path, monkeypatch) -> None:
    bench = tiny_bench(tmp_path / "b")
    leader = HOSTS.model_copy(update={"node_rank": 0, "nproc_per_node": 1, "nnodes": 2})
    options = options_for(bench, hosts=leader)
    monkeypatch.setattr("kernbench.commands.run.check_world_sizes", lambda hosts, cells: None)
    run = parsed_by_cli(options.to_argv(tmp_path / "out"), monkeypatch)
    assert same_options(run.options, options) and run.options.hosts == leader


def test_every_host_derives_the_same_rendezvous_id() -> None:
    one = default_rdzv_id("milestone 1h/ccl", "f" * 64, "node0:29500")
    assert one == default_rdzv_id("milestone 1h/ccl", "f" * 64, "node0:29500")
    assert one != default_rdzv_id("milestone 1h/ccl", "e" * 64, "node0:29500")
    assert one.startswith("milestone-1h-ccl-")


def test_a_host_starts_its_share_of_the_ranks_through_the_rendezvous() -> None:
    argv = worker_argv(4, Path("t.json"), "cpu", HOSTS, spawn=3)
    assert argv == [
        sys.executable, "-m", "kernbench.execute.launch", "--nnodes", "2",
        "--rdzv-endpoint", "node0:29500", "--rdzv-id", "job7-3", "--nproc-per-node", "2",
        "-m", "kernbench.execute.worker", "t.json",
    ]
    args = _parse(argv[3:])
    assert (args.nnodes, args.endpoint, args.rdzv_id, args.nproc_per_node) == (
        2, "node0:29500", "job7-3", 2)
    assert args.target == ["-m", "kernbench.execute.worker", "t.json"]


def test_the_launcher_wants_the_whole_rendezvous() -> None:
    with pytest.raises(SystemExit, match="needs --rdzv-endpoint and --rdzv-id"):
        _parse(["--nnodes", "2", "--nproc-per-node", "2", "x.py"])
    with pytest.raises(SystemExit, match="--nnodes must be at least 1"):
        _parse(["--nnodes", "0", "--nproc-per-node", "2", "x.py"])


def test_host_names_keep_what_an_earlier_start_heard(tmp_path: Path) -> None:
    assert load_host_names(tmp_path) is None
    save_host_names(tmp_path, ["a", "b", None])
    save_host_names(tmp_path, ["a2", None, None])
    assert load_host_names(tmp_path) == ["a2", "b", None]
    assert (tmp_path / HOST_NAMES_NAME).is_file()


def test_an_order_round_trips_as_json() -> None:
    order = Order(spec_hash="h", device="cpu", round=2, world_size=4, cells=[3, 1])
    assert Order.model_validate_json(order.model_dump_json()) == order


@pytest.mark.parametrize(("said", "reason"), [
    ("rendezvous r at h:1 failed: not all 2 hosts joined",
     "the hosts did not meet: rendezvous r at h:1 failed: not all 2 hosts joined"),
    ("", "the hosts did not meet: the launcher exited with exit code 4, printing nothing"),
])
def test_hosts_that_did_not_meet_are_given_a_reason_even_by_a_silent_launcher(
    tmp_path, monkeypatch, said, reason
) -> None:
    from kernbench.execute import launch
    from kernbench.execute.progress import Progress
    from kernbench.execute.rounds import RoundRunner
    from kernbench.execute.run_folder import RunFolder
    from kernbench.plan import plan
    from kernbench.spec.loader import load_bench

    bench = tiny_bench(tmp_path)
    options = options_for(bench, hosts=flags(nnodes=2, node_rank=0, nproc_per_node=1,
                                             endpoint="127.0.0.1:29500"))
    code = f"import sys; print({said!r}) if {said!r} else None; sys.exit({launch.EXIT_RENDEZVOUS})"
    monkeypatch.setattr(launch, "worker_argv", lambda *_: [sys.executable, "-c", code])
    cells = plan(load_bench(bench), "cpu")
    runner = RoundRunner(RunFolder(options, load_bench(bench), tmp_path / "out"), cells,
                         Progress(len(cells), "tiny"), "cpu")
    runner._spawn_and_watch(1, 1, cells)
    assert runner.hosts_lost == reason
