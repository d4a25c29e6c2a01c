"""scripts/ab_schedules.py: packing an A/B folder to commit, and the known-effect table."""

from __future__ import annotations

import gzip
import importlib.util
import shutil
from pathlib import Path

from kernbench.ab.outputs import summarize_ab
from kernbench.results.ab import AB_FORMAT
from kernbench.results.jsonio import read_json

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ab_schedules.py"
spec = importlib.util.spec_from_file_location("ab_schedules", SCRIPT)
assert spec is not None and spec.loader is not None
ab_schedules = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab_schedules)

DATA = ROOT / "benches" / "data" / "ab-schedules-h200"
RUN9 = DATA / "known-interleaved-5ms-run9"


def unpacked(tmp_path: Path) -> Path:
    """Run 9 as `kernbench ab` left it: plain results and turns, a lock and a journal."""
    folder = tmp_path / "raw"
    shutil.copytree(RUN9, folder)
    for packed in folder.rglob("*.json.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    (folder / "run.lock").touch()
    (folder / "r1_A" / "journal").mkdir()
    return folder


def test_pack_gzips_results_and_turns_and_keeps_what_summarize_needs(tmp_path: Path) -> None:
    dest = tmp_path / "packed"
    ab_schedules.pack(unpacked(tmp_path), dest)
    assert not (dest / "run.lock").exists() and not (dest / "r1_A" / "journal").exists()
    assert not list(dest.rglob("results.json")) and not list(dest.glob("r*_turns.json"))
    assert len(list(dest.glob("r*_turns.json.gz"))) == 6
    # the same bytes as the committed pack, so a re-pack shows no change in git
    for packed in RUN9.rglob("*.json.gz"):
        assert (dest / packed.relative_to(RUN9)).read_bytes() == packed.read_bytes()
    committed = AB_FORMAT.read(RUN9 / "ab.json")
    (dest / "ab.json").unlink()
    summarize_ab(dest)
    assert AB_FORMAT.read(dest / "ab.json") == committed


def test_the_table_counts_true_effects_inside_and_intervals_overlapping_the_reference() -> None:
    text = ab_schedules.table(DATA / "reference-run9.json", {"run9": RUN9}, min_us=0.0)
    reference = {c["id"]: c for c in read_json(DATA / "reference-run9.json")["cells"]}
    low, high = reference["plus5/shape=100x1024x1024x1024,dtype=bf16"]["ci95_pct"]
    assert f"+7.36 [{low:+.2f}, {high:+.2f}] %" in text
    # docs/ab-schedules.md, run 9: 7 of 12 inside, 10 of 12 overlapping
    assert text.splitlines()[-1].startswith("| run9 | 6 |")
    assert "| 9 of 9 | 0 | 7 of 12 | 10 of 12 |" in text.splitlines()[-1]
