"""scripts/ab_schedules.py: packing an A/B folder to commit, and the known-effect table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from script_modules import load_script

from kernbench.ab.outputs import summarize_ab
from kernbench.results.ab import AB_FORMAT
from kernbench.results.jsonio import read_json, write_json, write_packed_json

ROOT = Path(__file__).resolve().parents[1]
ab_schedules = load_script("ab_schedules")

DATA = ROOT / "benches" / "data" / "ab-schedules-h200"
RUN9 = DATA / "known-interleaved-5ms-run9"


MADE_IN, PROJECT = "/tmp/ab/known-interleaved", "/work/main"
COMMITTED_AT = str(RUN9.relative_to(ROOT))  # a side's pins: the A/B's, project-relative


def absolute(data: dict[str, Any]) -> dict[str, Any]:
    """A file's paths as the GPU machine wrote them (the committed ones are relative)."""
    if "bench_path" in data:
        data["bench_path"] = f"{PROJECT}/{data['bench_path']}"
    if isinstance(data.get("pins"), str):  # a side's pins file (results hold pins too)
        data["pins"] = data["pins"].replace(COMMITTED_AT, MADE_IN, 1)
    command = data.get("provenance", {}).get("command", [])
    if "--out" in command:
        command[command.index("--out") + 1] = MADE_IN
    if "provenance" in data:
        data["provenance"] = absolute(data["provenance"])
    return data


def unpacked(tmp_path: Path) -> Path:
    """Run 9 as `kernbench ab` left it on the GPU machine: plain results and turns, absolute
    paths, a lock and a journal."""
    folder = tmp_path / "raw"
    shutil.copytree(RUN9, folder)
    for packed in folder.rglob("*.json.xz"):
        write_json(packed.with_suffix(""), absolute(read_json(packed)))
        packed.unlink()
    for path in [folder / "ab-run.json", *folder.glob("*/run.json")]:
        write_json(path, absolute(read_json(path)))
    assert MADE_IN in (folder / "r1_A" / "run.json").read_text()
    (folder / "run.lock").touch()
    (folder / "r1_A" / "journal").mkdir()
    return folder


def packed_in_a_project(tmp_path: Path) -> Path:
    """Where run 9 is committed, in a checkout of its own (the bench copied along)."""
    project = tmp_path / "proj"
    (project / "benches").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "kernbench"\n')
    bench = read_json(RUN9 / "ab-run.json")["bench_path"]
    if (ROOT / bench).is_file():
        shutil.copy(ROOT / bench, project / bench)
    return project / COMMITTED_AT


def test_pack_packs_results_and_turns_and_makes_the_machines_paths_relative(
    tmp_path: Path,
) -> None:
    # the sides' pins become the project-relative path of the packed A/B's own pins, the
    # form `kernbench` resolves, not "pins.json" relative to the A/B's folder
    dest = packed_in_a_project(tmp_path)
    ab_schedules.pack(unpacked(tmp_path), dest)
    assert not (dest / "run.lock").exists() and not (dest / "r1_A" / "journal").exists()
    assert not list(dest.rglob("results.json")) and not list(dest.glob("r*_turns.json"))
    assert len(list(dest.glob("r*_turns.json.xz"))) == 6
    # the same bytes as the committed pack, paths relative again: a re-pack shows no change
    for packed in [*RUN9.rglob("*.json.xz"), *RUN9.rglob("*.json")]:
        assert (dest / packed.relative_to(RUN9)).read_bytes() == packed.read_bytes()
    committed = AB_FORMAT.read(RUN9 / "ab.json")
    (dest / "ab.json").unlink()
    summarize_ab(dest)
    rebuilt = AB_FORMAT.read(dest / "ab.json")  # version 6: it says where the sides ran
    assert rebuilt.measured_on is not None and rebuilt.measured_on.device_name == "NVIDIA H200"
    assert rebuilt.model_copy(update={"measured_on": None}) == committed


def test_a_repack_of_a_committed_ab_reads_its_relative_paths_and_changes_none(
    tmp_path: Path,
) -> None:
    # where_made resolves the sides' project-relative pins as kernbench does; taken as they
    # stand, they were an A/B folder to rewrite, and a copy outside any project got this
    # machine's absolute paths
    dest = tmp_path / "again"
    ab_schedules.pack(RUN9, dest)
    for packed in [*RUN9.rglob("*.json.xz"), *RUN9.rglob("*.json")]:
        assert (dest / packed.relative_to(RUN9)).read_bytes() == packed.read_bytes(), packed


def test_pack_relativizes_a_folder_packed_with_gzip_and_keeps_its_names(tmp_path: Path) -> None:
    # A/Bs committed before ADR 0069 hold .json.gz files: a re-pack reads them, makes the
    # machine's paths relative and writes them back under the same names.
    raw = unpacked(tmp_path)
    for plain in [*raw.rglob("results.json"), *raw.glob("r*_turns.json")]:
        write_packed_json(plain.with_suffix(".json.gz"), read_json(plain))
        plain.unlink()
    dest = tmp_path / "packed"
    ab_schedules.pack(raw, dest)
    gz = sorted(p.relative_to(dest) for p in dest.rglob("*.json.gz"))
    assert len([p for p in gz if p.name.endswith("_turns.json.gz")]) == 6
    assert len(gz) == len(list(RUN9.rglob("*.json.xz"))) and not list(dest.rglob("*.xz"))
    for path in gz:
        expected = read_json(RUN9 / path.with_suffix(".xz"))
        assert read_json(dest / path) == expected
        assert MADE_IN not in json.dumps(expected) and PROJECT not in json.dumps(expected)


def test_the_table_counts_true_effects_inside_and_intervals_overlapping_the_reference() -> None:
    text = ab_schedules.table(DATA / "reference-run9.json", {"run9": RUN9}, min_us=0.0)
    reference = {c["id"]: c for c in read_json(DATA / "reference-run9.json")["cells"]}
    low, high = reference["plus5/shape=100x1024x1024x1024,dtype=bf16"]["ci95_pct"]
    assert f"+7.36 [{low:+.2f}, {high:+.2f}] %" in text
    # docs/ab-schedules.md, run 9: 7 of 12 inside, 10 of 12 overlapping
    assert text.splitlines()[-1].startswith("| run9 | 6 |")
    assert "| 9 of 9 | 0 | 7 of 12 | 10 of 12 |" in text.splitlines()[-1]
