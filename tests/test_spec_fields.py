"""Errors a bench model's own validator finds name the offending key and its line, not
the file's first line; a results file given as a bench says what it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import spec_error_of

HEAD = "name: b\ndescription: d\nkernel: sleep\naxes:\n  a: [1, 2]\n  b: [3]\n"


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("zip:\n  - [a, c]\n", "8: zip.0.1: zip names 'c', which is not an axis"),
        ("zip:\n  - [a, b]\n", "8: zip.0: zipped axes ['a', 'b'] have different lengths"),
        (
            "  c: [4, 5]\nzip:\n  - [a, c]\n  - [c, a]\n",
            "10: zip.1.0: axis 'c' is in two zip groups",
        ),
        (
            "\nargs: {k: 1}\n",
            "8: args: `inputs`, `args` and `check` are for `op` benches, not `kernel`",
        ),
        ("op: torch.topk\n", "7: op: give either `kernel` or `op`, not both"),
    ],
)
def test_a_model_validators_error_names_its_key(tmp_path: Path, tail: str, expected: str) -> None:
    assert spec_error_of(tmp_path, HEAD + tail) == expected


def test_a_results_file_given_as_a_bench_says_so(tmp_path: Path) -> None:
    results = {"schema_version": 4, "bench": "b", "spec_hash": "0" * 16, "spec": {}, "cells": []}
    assert spec_error_of(tmp_path, json.dumps(results), "results.json") == (
        " this looks like a results file a run wrote (it has spec_hash and cells), not a bench "
        "file"
    )


NO_DESCRIPTION = "name: b\nkernel: sleep\naxes:\n  a: [1]\n"


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("axis:\n  a: [1]\n", "5: axis: unknown key; did you mean 'axes'? known: "),
        ("varaints: {v: {}}\n", "5: varaints: unknown key; did you mean 'variants'? known: "),
        ("timer:\n  budget: 1\n", "6: timer.budget: unknown key; did you mean 'budget_s'? known: "),
        ('rounds: "3"\n', "5: rounds: Input should be a valid integer (got '3') (and 1 more)"),
    ],
)
def test_an_error_at_its_own_line_comes_before_a_missing_field(
    tmp_path: Path, tail: str, expected: str
) -> None:
    # The missing `description` is reported at line 1 and would hide the typo's own line.
    error = spec_error_of(tmp_path, NO_DESCRIPTION + tail)
    assert error.startswith(expected)
    assert error.endswith(" (and 1 more)")


def test_a_missing_field_alone_is_still_reported(tmp_path: Path) -> None:
    assert spec_error_of(tmp_path, NO_DESCRIPTION) == "1: description: Field required"


COLLECTIVE = "name: c\ndescription: d\nkernel: collective\naxes:\n  op: [allreduce]\n"


@pytest.mark.parametrize("kind", ["cpu", "event", "graph"])
def test_a_collective_refuses_a_timer_kind_its_ranks_timer_would_ignore(
    tmp_path: Path, kind: str
) -> None:
    assert spec_error_of(tmp_path, COLLECTIVE + f"timer: {{budget_s: 1, kind: {kind}}}\n") == (
        f"6: timer.kind: the collective kernel is timed by its ranks, not by {kind}: use auto "
        "(duty and l2 choose how its samples are taken)"
    )
