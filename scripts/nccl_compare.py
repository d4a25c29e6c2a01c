"""kernbench's collective times against nccl-tests', size by size.

    python scripts/nccl_compare.py --nccl-tests LOG_DIR --results RESULTS [--results ...]
        [--dtype fp32] [--out-md FILE] [--out-json FILE]

LOG_DIR holds nccl-tests' output as `<test><logs>.log` (all_reduce, all_gather,
reduce_scatter; `--logs _graph` for a run with `-G`, `_mpi` for one process per GPU,
`_mpi_graph` for both), and repeated runs as `<test><logs>.<n>.log`; RESULTS a kernbench
results.json of milestone-1h-ccl, or the JSON of `scripts/ccl_reference.py` (the plain
loop in a process per GPU, its median), given once per run. Sizes are nccl-tests'
(kernbench's `bytes` axis follows them). A row per op, size and placement: nccl-tests'
time (µs), the measured one (kernbench's: the median of its round medians), their ratio;
with several runs of either, each side's median over its runs and their range; then the
worst ratio per size band against the targets (within 3% from 64 KiB, within 10% below),
and kernbench's alpha-beta fit against nccl-tests' smallest-message time.
`--reference-out FILE` also writes nccl-tests' points as a reference file, for
`kernbench render RESULTS --reference FILE`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

from kernbench.analyze.collective import fit_series
from kernbench.results.model import collective_fits, load
from kernbench.units import format_bytes

TESTS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce_scatter"}
NCCL_TYPES = {"fp32": "float", "bf16": "bfloat16", "fp16": "half"}
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+(.*)$")
SMALL = 64 << 10


def parse_nccl_tests(text: str, dtype: str) -> dict[tuple[int, bool], float]:
    """{(size, inplace): seconds} from one nccl-tests log (its out-of-place and in-place
    columns: time, algbw, busbw, #wrong each)."""
    times: dict[tuple[int, bool], float] = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if not match or match.group(3) != NCCL_TYPES[dtype]:
            continue
        fields = match.group(6).split()
        size = int(match.group(1))
        times[(size, False)] = float(fields[0]) * 1e-6
        times[(size, True)] = float(fields[4]) * 1e-6
    return times


def kernbench_times(results_path: Path, dtype: str) -> tuple[dict[Any, float], dict[str, Any]]:
    results = load(results_path)
    times = {}
    for cell in results.cells:
        params = cell.params
        medians = [r.median_s for r in cell.rounds if r.status == "ok" and r.median_s]
        if params.get("dtype") != dtype or not medians:
            continue
        key = (params["op"], int(params["bytes"]), bool(params["inplace"]))
        times[key] = statistics.median(medians)
    # Refitted as the figures are, never the fit stored with the file (ADR 0047 addendum).
    fits = {name: fit.model_dump() for name, fit in collective_fits(results.cells).items()}
    return times, fits


def loop_times(report: dict[str, Any], dtype: str) -> dict[Any, float]:
    """{(op, bytes, inplace): seconds} of a `ccl_reference.py` report."""
    if report.get("dtype") != dtype:
        return {}
    return {
        (row["op"], int(row["bytes"]), row["op"] == "allreduce" or bool(report["inplace"])):
            float(row["time_s"])
        for row in report["results"]
    }


def measured_times(path: Path, dtype: str) -> tuple[dict[Any, float], dict[str, Any], str]:
    """The times to compare, their fits and what measured them: a ccl_reference.py report
    or a kernbench results file."""
    data = json.loads(path.read_text()) if path.suffix == ".json" else None
    if isinstance(data, dict) and "iters" in data and "results" in data:
        label = "reference loop" + (" (graph)" if data.get("graph") else "")
        return loop_times(data, dtype), {}, label
    mine, fits = kernbench_times(path, dtype)
    return mine, fits, "kernbench"


def test_logs(log_dir: Path, test: str, suffix: str) -> list[Path]:
    """A test's logs: `<test><suffix>.log` and the repeated runs `<test><suffix>.<n>.log`."""
    once = log_dir / f"{test}{suffix}.log"
    repeats = sorted(log_dir.glob(f"{test}{suffix}.[0-9]*.log"),
                     key=lambda path: int(path.suffixes[-2][1:]))
    return ([once] if once.exists() else []) + repeats


def pooled(runs: list[dict[Any, float]]) -> dict[Any, list[float]]:
    """Each key's times over the runs that measured it."""
    found: dict[Any, list[float]] = {}
    for run in runs:
        for key, seconds in run.items():
            found.setdefault(key, []).append(seconds)
    return found


def compare(
    log_dir: Path, results_paths: list[Path], dtype: str, suffix: str = "", world_size: int = 2
) -> dict[str, Any]:
    measured_runs = [measured_times(path, dtype) for path in results_paths]
    mine = pooled([times for times, _, _ in measured_runs])
    fits, measured_by = measured_runs[0][1], measured_runs[0][2]
    if len(measured_runs) > 1 and measured_by == "kernbench":
        # Runs of other sizes (a sweep split over calls) or repeats: one fit over each
        # size's median over the runs (a run's own fits use its pooled samples' median).
        points = [({"op": op, "bytes": size, "inplace": inplace, "dtype": dtype,
                    "world_size": world_size}, statistics.median(times))
                  for (op, size, inplace), times in mine.items()]
        fits = {name: vars(fit) for name, fit in fit_series(points).items()}
    rows = []
    for test, op in TESTS.items():
        logs = test_logs(log_dir, test, suffix)
        references = pooled([parse_nccl_tests(log.read_text(), dtype) for log in logs])
        for (size, inplace), reference_runs in sorted(references.items()):
            measured = mine.get((op, size, inplace))
            if not measured:
                continue
            reference = statistics.median(reference_runs)
            row = {
                "op": op,
                "bytes": size,
                "inplace": inplace,
                "nccl_tests_s": reference,
                "kernbench_s": statistics.median(measured),
                "ratio": statistics.median(measured) / reference,
            }
            if len(reference_runs) > 1 or len(measured) > 1:
                row["nccl_tests_range_s"] = [min(reference_runs), max(reference_runs)]
                row["kernbench_range_s"] = [min(measured), max(measured)]
            rows.append(row)
    return {"dtype": dtype, "reference": f"nccl-tests{suffix or ''}", "measured": measured_by,
            "runs": {"nccl_tests": max((len(test_logs(log_dir, t, suffix)) for t in TESTS),
                                       default=0),
                     "measured": len(results_paths)},
            "rows": rows, "fits": fits}


def reference(log_dir: Path, dtype: str, suffix: str, world_size: int) -> dict[str, Any]:
    """nccl-tests' points as a kernbench reference file (kernbench/results/reference.py)."""
    points, version = [], "nccl-tests"
    for test, op in TESTS.items():
        texts = [log.read_text() for log in test_logs(log_dir, test, suffix)]
        for text in texts:
            found = re.search(r"nccl-tests version (\S+)", text)
            version = f"nccl-tests {found.group(1)}" if found else version
        runs = pooled([parse_nccl_tests(text, dtype) for text in texts])
        for (size, inplace), seconds in sorted(runs.items()):
            if op == "allreduce" and not inplace:
                continue  # kernbench's all-reduce is in place only
            points.append({"op": op, "bytes": size, "inplace": inplace, "dtype": dtype,
                           "world_size": world_size, "time_s": statistics.median(seconds)})
    flavour = {"": "", "_graph": " -G", "_mpi": " (a process per GPU)",
               "_mpi_graph": " -G (a process per GPU)",
               "_mpi_graph_nomix": " -G, graph mixing off (a process per GPU)",
               "_mpi_graph_noreg": " -G, graph mixing and buffer registration off (a process "
                                   "per GPU)"}.get(suffix, suffix)
    return {"schema_version": 1, "source": version + flavour, "points": points}


def band_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    small = [r["ratio"] for r in rows if r["bytes"] < SMALL]
    large = [r["ratio"] for r in rows if r["bytes"] >= SMALL]

    def worst(ratios: list[float]) -> float | None:
        return max(ratios, key=lambda r: abs(r - 1)) if ratios else None

    return {
        "below_64KiB": {
            "worst_ratio": worst(small),
            "target": 0.10,
            "met": all(abs(r - 1) <= 0.10 for r in small),
        },
        "from_64KiB": {
            "worst_ratio": worst(large),
            "target": 0.03,
            "met": all(abs(r - 1) <= 0.03 for r in large),
        },
    }


def microseconds(seconds: float, span: list[float] | None) -> str:
    """'12.30', or with a range of runs '12.30 (11.90-15.10)'."""
    if not span:
        return f"{seconds * 1e6:.2f}"
    return f"{seconds * 1e6:.2f} ({span[0] * 1e6:.2f}-{span[1] * 1e6:.2f})"


def markdown(report: dict[str, Any]) -> str:
    runs = report.get("runs", {})
    lines = []
    if runs.get("nccl_tests", 1) > 1 or runs.get("measured", 1) > 1:
        lines += [f"Medians over {runs['nccl_tests']} nccl-tests runs and {runs['measured']} "
                  "measured runs (their range in brackets).", ""]
    lines += [
        f"| op | size | placement | {report['reference']} µs | "
        f"{report.get('measured', 'kernbench')} µs | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['op']} | {format_bytes(r['bytes'])} | {'in' if r['inplace'] else 'out of'} place"
            f" | {microseconds(r['nccl_tests_s'], r.get('nccl_tests_range_s'))}"
            f" | {microseconds(r['kernbench_s'], r.get('kernbench_range_s'))} | {r['ratio']:.3f} |"
        )
    bands = report["bands"]
    lines.append("")
    lines += alpha_lines(report)
    for name, band in bands.items():
        worst = band["worst_ratio"]
        shown = "n/a" if worst is None else f"{worst:.3f}"
        verdict = "met" if band["met"] else "NOT met"
        lines.append(f"- {name}: worst ratio {shown} (target ±{band['target']:.0%}): {verdict}")
    return "\n".join(lines) + "\n"


def alpha_lines(report: dict[str, Any]) -> list[str]:
    """Each series' fitted α against nccl-tests' time at the series' smallest size."""
    smallest: dict[tuple[str, bool], dict[str, Any]] = {}
    for row in report["rows"]:
        key = (row["op"], row["inplace"])
        if key not in smallest or row["bytes"] < smallest[key]["bytes"]:
            smallest[key] = row
    lines = []
    for name, fit in sorted(report.get("fits", {}).items()):
        op, _, dtype, placement = name.split(" ")
        row = smallest.get((op, placement == "in-place"))
        if row is None or dtype != report["dtype"]:
            continue
        ratio = fit["alpha_s"] / row["nccl_tests_s"]
        lines.append(
            f"- α of {name}: {fit['alpha_s'] * 1e6:.2f} µs (β {fit['beta_bytes_per_s'] / 1e9:.0f}"
            f" GB/s), {ratio:.3f} of nccl-tests at {format_bytes(row['bytes'])} "
            f"({row['nccl_tests_s'] * 1e6:.2f} µs; target ±10%): "
            f"{'met' if abs(ratio - 1) <= 0.10 else 'NOT met'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nccl-tests", type=Path, required=True)
    parser.add_argument("--results", type=Path, action="append", required=True,
                        help="a run's results (repeatable: the median over the runs)")
    parser.add_argument("--dtype", default="fp32", choices=sorted(NCCL_TYPES))
    parser.add_argument("--logs", default="", help="the logs' suffix: '', _graph, _mpi...")
    parser.add_argument("--out-md", type=Path)
    parser.add_argument("--out-json", type=Path)
    parser.add_argument("--reference-out", type=Path, help="nccl-tests' points, for render")
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    logs = args.logs
    report = compare(args.nccl_tests, args.results, args.dtype, logs, args.world_size)
    report["bands"] = band_summary(report["rows"])
    text = markdown(report)
    print(text)
    if args.out_md:
        args.out_md.write_text(text)
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=1) + "\n")
    if args.reference_out:
        points = reference(args.nccl_tests, args.dtype, logs, args.world_size)
        args.reference_out.write_text(json.dumps(points, indent=1) + "\n")


if __name__ == "__main__":
    main()
