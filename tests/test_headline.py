"""The report's opening table: the best throughput of each variant against its ceiling."""

from __future__ import annotations

from pathlib import Path

from kernbench.render.headline import headline
from kernbench.render.report import write_report
from kernbench.results import model as results_io

DATA = Path(__file__).resolve().parents[1] / "benches" / "data"


def _rows(name: str) -> dict[str, dict[str, str]]:
    table = headline(results_io.load(DATA / name))
    assert table is not None
    return {row["variant"]: row for row in table["rows"]}


def test_a_memory_bound_bench_is_judged_by_gb_s_against_the_memory_bandwidth():
    rows = _rows("ops-norm-h200/results.json.xz")
    assert list(rows) == ["eager", "compile", "triton"]
    assert rows["compile"]["best"] == "4303"
    assert rows["compile"]["cell"] == "op=rms_norm,rows=16384,hidden=16384,dtype=fp32"
    assert rows["compile"]["of_ceiling"] == "101% of 4253 (measured memory bandwidth)"
    assert rows["eager"]["ok"] == "60"


def test_a_staged_gemm_is_judged_against_its_roofline_not_the_compute_peak():
    # 220 TFLOP/s against the bf16 peak of 848 reads as 26%: a staged cell is held by its
    # host copies, and reaching 99% of what they allow is the headline.
    rows = _rows("milestone-1h-gemm.json.xz")
    assert rows["staged_pinned"]["of_ceiling"] == "99% of 221.7 (the roofline, measured ceilings)"
    assert rows["triton"]["best"] == "825.3"


def test_the_report_opens_with_the_table_before_the_variants(tmp_path):
    results = results_io.load(DATA / "milestone-1h-ccl.json")
    for page in write_report(results, tmp_path):
        text = page.read_text()
        assert text.index("Best per variant") < text.index("Variant")
    md = (tmp_path / "report.md").read_text()
    assert ("| [default](#variant-default) | 210 | 329.7 | "
            "op=allreduce,world_size=2,bytes=1073741824,") in md
    assert "| 73% of 450 (datasheet interconnect) |" in md


def test_each_variant_in_the_table_links_to_its_own_table(tmp_path):
    # 180 rows in three tables: the opening table is the way into them, and the HTML
    # table's heading row stays in view while its rows scroll past.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    write_report(results, tmp_path)
    md, page = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    assert "| [staged_pinned](#variant-staged_pinned) | 17 |" in md
    assert "## Variant `staged_pinned`" in md  # GitHub's anchor of it: variant-staged_pinned
    assert '<a href="#variant-staged_pinned"><code>staged_pinned</code></a>' in page
    assert '<h2 id="variant-staged_pinned">' in page
    assert "th { position: sticky; top: 0;" in page


def test_a_best_cell_that_is_flagged_carries_its_flags_into_the_table(tmp_path):
    # Every variant's best ops-attention cell ran throttled (sustained duty, power cap):
    # the headline number says so where it is read, not 150 rows further down.
    rows = _rows("ops-attention-h200/results.json.xz")
    assert rows["flash"]["flags"] == "throttled 100%"
    assert rows["math"]["flags"] == "throttled 53%"
    write_report(results_io.load(DATA / "ops-attention-h200/results.json.xz"), tmp_path)
    assert "| 48% of 702.5 (the roofline, measured ceilings) | throttled 100% |" in (
        tmp_path / "report.md").read_text()
