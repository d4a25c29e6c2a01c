"""The fidelity page from its JSON alone: what was reached, in words, and the markdown,
with ncu's launches read into cases (`fidelity_ncu.py`), each case summed up against the
others (`fidelity_summary.py`) and the tables (`fidelity_page_tables.py`). No torch and no
GPU: the tests and `scripts/fidelity.py --render` rebuild a page anywhere;
`scripts/fidelity.py` measures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fidelity_cases import EMPTY_CASE
from fidelity_ncu import NCU_CACHE, ncu_cases, ncu_errors
from fidelity_page_tables import (
    bisect_table,
    fmt_mhz,
    fmt_pct,
    fmt_us,
    gap_table,
    gaps_table,
    main_table,
    ncu_table,
    small_table,
)
from fidelity_summary import ISOLATED_TARGET, MIN_KERNEL_S, TARGET, median_of, summarize, within


def span(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}" if values else "-"


def reached(rows: list[dict[str, Any]]) -> str:
    """The 'what was reached' paragraph, from the numbers."""
    long = [r for r in rows if r["kernel_s"] >= MIN_KERNEL_S]
    if not long:
        return "No case ran 20 µs or longer."
    met = [r["case"] for r in long if within(r["write_vs_do_bench"])]
    missed = [r["case"] for r in long if not within(r["write_vs_do_bench"])]
    write = [r["write_vs_do_bench"]["ratio"] for r in long if r["write_vs_do_bench"]]
    read = [r["read_vs_do_bench"]["ratio"] for r in long if r["read_vs_do_bench"]]
    spreads = [r["write_vs_do_bench"]["spread"] for r in long if r["write_vs_do_bench"]] or [0.0]
    text = [
        f"Kernels of 20 µs and more (n = {len(long)}): kernbench's event timer with do_bench's "
        f"flush agrees with do_bench at {span(write)} (largest per-repetition spread of the "
        f"ratio {fmt_pct(max(spreads))}); within 1% with a spread under 1%: "
        f"{', '.join(met) or 'none'}" + (f"; not: {', '.join(missed)}." if missed else "."),
        f"With its own read flush the ratio is {span(read)}: the difference between the two "
        "is the flush policy (do_bench's dirty lines are written back inside the timed "
        "kernel), not the timer.",
    ]
    loop = [r["loop_vs_do_bench"]["ratio"] for r in long if r.get("loop_vs_do_bench")]
    unsettled = [r["unsettled_vs_do_bench"]["ratio"] for r in long
                 if r.get("unsettled_vs_do_bench")]
    if loop or unsettled:
        text.append(
            f"Bisecting write / do_bench: do_bench's own loop with kernbench's flush and "
            f"events / do_bench {span(loop)}; kernbench's timer without its settle phase / "
            f"do_bench {span(unsettled)}."
        )
    settled = [r["write_vs_settled_do_bench"]["ratio"] for r in long
               if r.get("write_vs_settled_do_bench")]
    longer = [r["write_vs_long_do_bench"]["ratio"] for r in long
              if r.get("write_vs_long_do_bench")]
    if settled or longer:
        either = [r["case"] for r in long
                  if within(r.get("write_vs_settled_do_bench")) or within(
                      r.get("write_vs_long_do_bench"))]
        text.append(
            f"Against do_bench in kernbench's power state: behind the same settle phase "
            f"{span(settled)}, sampling over kernbench's whole window {span(longer)}; within "
            f"1% with a spread under 1% on either: {', '.join(either) or 'none'}."
        )
    same = [r for r in long if r.get("write_vs_nowarmup_do_bench")]
    if same:
        ratios = [r["write_vs_nowarmup_do_bench"]["ratio"] for r in same]
        close = [r["case"] for r in same
                 if abs(r["write_vs_nowarmup_do_bench"]["ratio"] - 1) <= TARGET]
        text.append(
            f"Against do_bench started from the same state (its warm-up, which leaves its "
            f"first samples slow, left out): {span(ratios)}; medians within 1%: "
            f"{', '.join(close) or 'none'}."
        )
    empty = next((r for r in rows if r["case"] == EMPTY_CASE), None)
    if empty is not None:
        text.append(
            f"An empty kernel reads {fmt_us(median_of(empty, 'event_read'))} µs by the event "
            f"timer, {fmt_us(median_of(empty, 'isolated_read'))} µs isolated and "
            f"{fmt_us(empty.get('ncu_all', {}).get('median_s'))} µs by ncu: what events and "
            "a launch add around any kernel, against ncu's kernel duration alone."
        )
    with_ncu = [r for r in long if "vs_ncu" in r]
    if with_ncu:
        ev = [r["vs_ncu"]["event"] for r in with_ncu if r["vs_ncu"]["event"]]
        gr = [r["vs_ncu"]["graph"] for r in with_ncu if r["vs_ncu"]["graph"]]
        mhz = [r["ncu_all"]["clock_mhz"] for r in with_ncu if r["ncu_all"]["clock_mhz"]]
        ok = [r["case"] for r in with_ncu if abs((r["vs_ncu"]["event"] or 0) - 1) <= TARGET]
        iso = [r["vs_ncu"].get("isolated") for r in with_ncu if r["vs_ncu"].get("isolated")]
        iso_ok = [
            r["case"] for r in with_ncu
            if abs((r["vs_ncu"].get("isolated") or 0) - 1) <= ISOLATED_TARGET
        ]
        if iso:
            text.append(
                f"The isolated duty (an idle gap before each sample) against ncu: {span(iso)}; "
                f"within {ISOLATED_TARGET:.0%}: {', '.join(iso_ok) or 'none'}."
            )
        cupti = [r["vs_ncu"].get("cupti") for r in with_ncu if r["vs_ncu"].get("cupti")]
        cupti_ok = [r["case"] for r in with_ncu
                    if abs((r["vs_ncu"].get("cupti") or 0) - 1) <= ISOLATED_TARGET]
        if cupti:
            text.append(
                f"The isolated duty timed by CUPTI's kernel records (the timer `auto` gives "
                f"isolated cells) against ncu: {span(cupti)}; within {ISOLATED_TARGET:.0%}: "
                f"{', '.join(cupti_ok) or 'none'}."
            )
        text.append(
            f"Against ncu's isolated cold launches: event/ncu {span(ev)}, graph/ncu {span(gr)}, "
            f"ncu's launches ran at {fmt_mhz(min(mhz, default=None))}-"
            f"{fmt_mhz(max(mhz, default=None))} MHz in-kernel; event within 1% of ncu: "
            f"{', '.join(ok) or 'none'}."
        )
    else:
        text.append("ncu gave no numbers in this run.")
    return " ".join(text)


def precondition_text(data: dict[str, Any]) -> str:
    seconds = data["settings"].get("precondition_s")
    if not seconds:
        return ", each tool in the state the tool before it left"
    idle = data["settings"].get("precondition_idle_s")
    if idle:
        return (f", each tool behind {idle:g} s idle and then {seconds:g} s of do_bench's flush "
                f"and the kernel back to back (an isolated tool: the idle alone)")
    return (f", each tool behind {seconds:g} s of do_bench's flush and the kernel back to back "
            f"(an isolated tool: {seconds:g} s idle)")


def markdown(data: dict[str, Any]) -> str:
    meta, names = data["provenance"], data["settings"]["cases"]
    ncu = ncu_cases(data.get("ncu", {}), names)
    rows = [
        summarize(name, data["cases"][name], ncu) for name in names if "runs" in data["cases"][name]
    ]
    failed = [
        f"- {name}: {case['error']}" for name, case in data["cases"].items() if "error" in case
    ]
    failed += [
        f"- {name}, {tool}: {error}"
        for name, case in data["cases"].items()
        for tool, error in case.get("tool_errors", {}).items()
    ]
    lines = [
        "# kernbench timer fidelity",
        "",
        f"{meta['gpu']}, driver {meta['driver']}, torch {meta['torch']} (CUDA {meta['cuda']}), "
        f"triton {meta['triton']}, {meta['date']}; {data['settings']['reps']} interleaved "
        "repetitions per case, order reversed every other one" + precondition_text(data)
        + ". Ratios: median of repetition medians, with the per-repetition range in "
        "brackets. All cold L2 unless marked.",
        "",
        "## What was reached",
        "",
        reached(rows),
        "",
        "## kernbench against do_bench (same process, interleaved)",
        "",
        *main_table(rows),
        "",
        "## kernbench against ncu (isolated launches, --clock-control none)",
        "",
        *ncu_table(rows),
        *gap_table(rows),
        "",
        *bisect_table(rows),
        "## Sustained batches: what runs between them on the GPU",
        "",
        *(gaps_table(rows) or ["No gaps recorded (a run before they were)."]),
        "",
        *small_table(rows),
        "## Flushes",
        "",
        *[f"- {tool}: {how}" for tool, how in sorted(meta["flush"].items())],
    ]
    for cache in NCU_CACHE:
        errors = ncu_errors(ncu[cache]) if cache in ncu else []
        if errors:
            lines += ["", f"ncu --cache-control {cache}: {'; '.join(errors)}"]
    if failed:
        lines += ["", "## Failed cases", "", *failed]
    return "\n".join(lines) + "\n"


def write(out: Path, data: dict[str, Any]) -> str:
    from kernbench.results.jsonio import write_json

    write_json(out, data)
    text = markdown(data)
    out.with_suffix(".md").write_text(text)
    return text
