"""The figure footer names the code that measured: version, commit, the tree's state."""

from __future__ import annotations

from typing import Any

import pytest

from kernbench.results.provenance import code_label

SHA = "aee041d60de5592a21dac19c10231718304e4ed7"


@pytest.mark.parametrize(
    ("prov", "label"),
    [
        ({"kernbench": "0.1.0", "git": {"commit": SHA, "dirty": False}},
         "kernbench 0.1.0 @ aee041d60d"),
        ({"kernbench": "0.1.0", "git": {"commit": SHA, "dirty": True}},
         "kernbench 0.1.0 @ aee041d60d (dirty)"),
        ({"kernbench": "0.1.0", "git": {"commit": SHA, "dirty": None}},
         "kernbench 0.1.0 @ aee041d60d (tree state not recorded)"),
        ({"kernbench": "0.2.0", "git": {}}, "kernbench 0.2.0, no git commit"),
        ({"kernbench": None, "git": {"commit": "HEAD", "dirty": False}},
         "kernbench (version unknown), no git commit"),
        ({}, "kernbench (version unknown), no git commit"),
        # A provenance edited by hand: a git that is not a mapping is no commit, not a crash.
        ({"kernbench": "0.2.0", "git": SHA}, "kernbench 0.2.0, no git commit"),
    ],
)
def test_code_label(prov: dict[str, Any], label: str) -> None:
    assert code_label(prov) == label
