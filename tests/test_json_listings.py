"""`list --json` and `plan --json`: the spec commands' output for tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import invoke, new_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = new_project(tmp_path, monkeypatch, "axes:\n  work_us: [10, 20]\n")
    (root / "benches" / "broken.yaml").write_text("name: broken\nkernel: sleep\n")
    return root


def test_list_json_names_every_bench_and_why_one_does_not_load(project: Path) -> None:
    code, out, _ = invoke("list", "--json")
    rows = {row["name"]: row for row in json.loads(out)}
    assert code == 0 and set(rows) == {"alpha", "beta", "broken"}
    assert rows["alpha"]["description"] == "the alpha bench"
    assert "description" in rows["broken"]["error"]


def test_plan_json_gives_each_cell_and_the_estimate(project: Path) -> None:
    code, out, _ = invoke("plan", "--bench", "alpha", "--device", "cpu", "--json",
                          "--only", "work_us=20")
    document = json.loads(out)
    assert code == 0 and document["bench"] == "alpha" and document["device"] == "cpu"
    assert [c["id"] for c in document["cells"]] == ["default/work_us=20"]
    assert document["cells"][0]["params"]["work_us"] == 20
    assert document["estimate_s"] > 0
