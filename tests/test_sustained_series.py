"""scripts/sustained_series.py's pure parts: the episode table and the figure, from a
synthetic series (the recording itself needs a GPU)."""

from __future__ import annotations

from script_modules import load_script

series = load_script("sustained_series")


def _step(slow_from_ms: float = 800.0, slowdown: float = 0.10) -> dict:
    t_ms = [i * 0.25 for i in range(4000)]  # 1 s, a sample every 250 µs
    samples = [90.0 if t < 75 else 100.0 * (1 + slowdown) if t >= slow_from_ms else 100.0
               for t in t_ms]
    return {"t_ms": t_ms, "samples_us": samples, "rep": 0}


def _found() -> dict:
    row = {"samples_us": [100.0, 101.0, 99.0], "rep": 0}
    runs = {tool: [row] for tool in series.TOOLS}
    runs.update(step_hot=[_step()], step_cold=[_step(slowdown=0.2)])
    return {"cases": {"gemm-fp16-4096": runs}}


def test_a_slow_episode_moves_the_mean_and_not_the_median() -> None:
    rows = series.episode_rows(_found())
    hot = next(r for r in rows if "step_hot" in r).split("|")
    # After 150 ms, 200 of 850 ms are the episode (24%), 10% slow: the mean moves 2.35%.
    assert hot[4].strip() == "100.0"
    assert hot[5].strip() == "24%, +10.0%"
    assert hot[6].strip() == "+0.00%"
    assert hot[7].strip() == "+2.35%"
    cold = next(r for r in rows if "step_cold" in r).split("|")
    assert cold[7].strip() == "+4.71%" and cold[6].strip() == "+0.00%"


def test_the_figure_draws_from_a_recorded_series(tmp_path) -> None:
    out = tmp_path / "series.png"
    series.figure(_found(), out)
    assert out.stat().st_size > 10_000
