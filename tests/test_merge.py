"""`merge`: shards join only into one whole sweep; each refusal is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke
from fixtures_results import make_gemm_results

from kernbench.errors import EXIT_USAGE, UserError
from kernbench.results import model as results_io
from kernbench.results.merge import merge_results, mixed_provenance
from kernbench.results.model import Results, Selection


def shard_files(
    tmp_path: Path, count: int, only: list[str] | None = None, given: tuple[int, ...] = ()
) -> list[Path]:
    """Shards I/count of one sweep, as `run --shard I/count` writes them (`given`: these
    shards only, default all)."""
    whole = make_gemm_results(failed=False)
    paths = []
    for i in given or range(1, count + 1):
        part = whole.model_copy(update={
            "cells": whole.cells[i - 1 :: count],
            "selection": Selection(only=only or [], shard=f"{i}/{count}"),
        })
        path = tmp_path / f"shard{i}{'-'.join(only or [])}.json"
        results_io.save(part, path)
        paths.append(path)
    return paths


def refusal(paths: list[Path]) -> str:
    with pytest.raises(UserError) as info:
        merge_results(paths)
    assert info.value.code == EXIT_USAGE
    return info.value.message


def test_every_shard_merges_into_the_whole_sweep(tmp_path: Path) -> None:
    merged = merge_results(shard_files(tmp_path, 3))
    assert [c.index for c in merged.cells] == [c.index for c in make_gemm_results().cells]
    assert merged.selection == Selection()


def test_a_missing_shard_is_refused(tmp_path: Path) -> None:
    paths = shard_files(tmp_path, 4, given=(1, 3))
    assert refusal(paths) == "merge: shards 2/4, 4/4 missing; give every shard of the sweep"


def test_a_shard_given_twice_is_refused(tmp_path: Path) -> None:
    first, second = shard_files(tmp_path, 2)
    assert refusal([first, second, first]) == f"{first}: shard 1/2 given twice (also {first})"


def test_shards_of_other_counts_are_refused(tmp_path: Path) -> None:
    halves = shard_files(tmp_path / "halves", 2)
    thirds = shard_files(tmp_path / "thirds", 3)
    assert refusal([halves[0], thirds[1], thirds[2]]) == (
        "merge: shards of different counts (1/2, 2/3, 3/3); these are not shards of one sweep"
    )


def test_shards_of_other_selections_are_refused(tmp_path: Path) -> None:
    plain = shard_files(tmp_path, 2)
    bf16 = shard_files(tmp_path, 2, only=["dtype=bf16"])
    assert refusal([plain[0], bf16[1]]) == (
        f"{bf16[1]}: selection.only: ['dtype=bf16'] differs from {plain[0]}'s []; "
        "these are not shards of one sweep"
    )


def test_shards_of_other_commits_merge_with_a_note(tmp_path: Path) -> None:
    first, second = shard_files(tmp_path, 2)
    later: Results = results_io.load(second)
    later.provenance["git"] = {"commit": "b" * 40, "dirty": False}
    results_io.save(later, second)
    merged = merge_results([first, second])
    commits = sorted(str(s["commit"]) for s in merged.provenance["merged_from"])
    assert mixed_provenance(merged) == (
        f"note: the shards were measured at different commits ({', '.join(commits)})"
    )
    assert mixed_provenance(merge_results(shard_files(tmp_path / "same", 2))) is None


def test_out_in_a_shards_run_folder_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    parts = []
    for i, path in enumerate(shard_files(tmp_path, 2), 1):
        folder = tmp_path / f"shard{i}"
        folder.mkdir()
        (folder / "run.json").write_text("{}\n")  # a run folder, as `run --shard` leaves
        parts.append(str(path.rename(folder / "results.json")))
    before = Path(parts[0]).read_bytes()
    code, _, err = invoke("merge", *parts, "--out", parts[0])
    assert (code, err) == (EXIT_USAGE, f"--out: {tmp_path / 'shard1'} holds a run, whose "
                           "results.json and figures are its own; give a path outside it\n")
    assert Path(parts[0]).read_bytes() == before
    assert not (tmp_path / "shard1" / "figures").exists()


def test_out_that_is_one_of_the_files_merged_is_refused(tmp_path: Path) -> None:
    parts = [str(path) for path in shard_files(tmp_path, 2)]
    before = Path(parts[1]).read_bytes()
    code, _, err = invoke("merge", *parts, "--out", parts[1], "--no-figures")
    assert (code, err) == (EXIT_USAGE, f"--out: {parts[1]} is one of the files merged; give "
                           "another path\n")
    assert Path(parts[1]).read_bytes() == before
