"""`kernbench/errors.py`'s checks of what a user typed: a whole number is ASCII digits,
and each place that reads one refuses the other digits Unicode knows in one line; an
environment variable of seconds that holds no such number is refused naming both."""

from __future__ import annotations

import pytest

from kernbench.ab.settings import parse_rounds
from kernbench.errors import (
    EXIT_USAGE,
    UserError,
    is_whole_number,
    name_too_long,
    seconds_from_env,
)
from kernbench.execute import lifetime
from kernbench.execute.gpus import choose_gpus, parse_listing
from kernbench.execute.hosts import RENDEZVOUS_TIMEOUT_ENV, rendezvous_timeout_s
from kernbench.execute.launch import _parse
from kernbench.kernels import collective
from kernbench.plan import parse_indices, shard

# '²' is a digit to str.isdigit that int() refuses; '٣' (Arabic-Indic three) one that int()
# reads as 3: a user typing either meant no number kernbench should act on.
NOT_ASCII = ["²", "٣", "1²", "１２"]


@pytest.mark.parametrize(("text", "whole"), [("12", True), ("0", True), ("", False),
                                             ("²", False), ("٣", False), ("１２", False),
                                             ("-1", False), (" 1", False), ("1\n", False)])
def test_a_whole_number_is_ascii_digits(text: str, whole: bool) -> None:
    assert is_whole_number(text) is whole


@pytest.mark.parametrize("text", NOT_ASCII)
def test_the_number_options_refuse_other_digits_in_one_line(text: str) -> None:
    found, _ = parse_listing("0, NVIDIA H200, GPU-aaaa-0000, 570.86.15\n")
    with pytest.raises(UserError, match="^--gpus: "):
        choose_gpus(text, found, mixed_ok=False)
    with pytest.raises(UserError, match="^--rounds: "):
        parse_rounds(text)
    with pytest.raises(UserError, match="^--rounds: "):
        parse_rounds(f"auto:{text}")
    with pytest.raises(UserError, match="^--shard: "):
        shard([], f"{text}/2")
    with pytest.raises(UserError, match="^--cells: "):
        parse_indices(f"1,{text}")


@pytest.mark.parametrize("text", NOT_ASCII)
def test_the_launcher_refuses_other_digits_with_its_usage(text: str) -> None:
    with pytest.raises(SystemExit, match="--nproc-per-node N"):
        _parse(["--nproc-per-node", text, "x.py"])
    with pytest.raises(SystemExit, match="--nnodes must be at least 1"):
        _parse(["--nnodes", text, "--nproc-per-node", "1", "x.py"])


def test_a_runner_pid_of_other_digits_falls_back_to_the_parent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[int] = []
    monkeypatch.setattr(lifetime, "die_with_parent", watched.append)
    monkeypatch.setattr(lifetime.os, "getppid", lambda: 4242)
    monkeypatch.setenv(lifetime.PARENT_PID_ENV, "٣")
    lifetime.die_with_runner()
    monkeypatch.setenv(lifetime.PARENT_PID_ENV, "17")
    lifetime.die_with_runner()
    assert watched == [4242, 17]


@pytest.mark.parametrize(("raw", "seconds"), [(None, 7.0), ("", 7.0), ("30", 30.0),
                                              ("0.5", 0.5), (" 2 ", 2.0)])
def test_seconds_from_env_reads_a_positive_number(
        monkeypatch: pytest.MonkeyPatch, raw: str | None, seconds: float) -> None:
    if raw is None:
        monkeypatch.delenv("KB_TEST_S", raising=False)
    else:
        monkeypatch.setenv("KB_TEST_S", raw)
    assert seconds_from_env("KB_TEST_S", 7.0) == seconds


@pytest.mark.parametrize(("raw", "why"), [("ten", "is not a number of seconds"),
                                          ("²", "is not a number of seconds"),
                                          ("0", "is not a positive number of seconds"),
                                          ("-5", "is not a positive number of seconds"),
                                          ("nan", "is not a positive number of seconds"),
                                          ("inf", "is not a positive number of seconds")])
def test_seconds_from_env_refuses_a_bad_value_in_one_line(
        monkeypatch: pytest.MonkeyPatch, raw: str, why: str) -> None:
    monkeypatch.setenv("KB_TEST_S", raw)
    with pytest.raises(UserError) as caught:
        seconds_from_env("KB_TEST_S", 7.0)
    assert caught.value.message == f"KB_TEST_S: {raw!r} {why}"
    assert caught.value.code == EXIT_USAGE


def test_the_rendezvous_timeout_is_read_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RENDEZVOUS_TIMEOUT_ENV, "inf")
    with pytest.raises(UserError, match=f"^{RENDEZVOUS_TIMEOUT_ENV}: 'inf' is not a positive"):
        rendezvous_timeout_s()


def test_the_collective_timeout_is_refused_before_the_group_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    dist = pytest.importorskip("torch.distributed")
    # Another test may have joined this process's group already; the timeout is read first.
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setenv(collective.TIMEOUT_ENV, "5m")
    with pytest.raises(UserError, match=f"^{collective.TIMEOUT_ENV}: '5m' is not a number"):
        collective.ensure_process_group("cpu", 1)


def test_only_a_name_too_long_becomes_the_users_error(tmp_path) -> None:
    import errno

    with pytest.raises(OSError) as raised:
        (tmp_path / ("x" * 300)).exists()
    error = name_too_long(raised.value)
    assert error is not None and error.code == EXIT_USAGE
    assert error.message == f"{tmp_path / ('x' * 300)}: File name too long"
    assert name_too_long(OSError(errno.EACCES, "Permission denied", "/root/x")) is None
    assert name_too_long(FileNotFoundError(errno.ENOENT, "No such file", "x")) is None
