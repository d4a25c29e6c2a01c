"""`kernbench ab` refuses a plan it cannot pair as `run` and `plan` do: one line at the
bench's `exclude:`, the file and its line named."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import invoke

from kernbench.errors import EXIT_USAGE

BENCH = """\
name: nap-ab
description: short spins
kernel: sleep
axes:
  work_us: [100, 200]
variants:
  base: {{}}
  slower: {{scale: 1.1}}
exclude:
  - {exclusion}
timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
"""


def write(tmp_path: Path, exclusion: str) -> Path:
    path = tmp_path / "nap-ab.yaml"
    path.write_text(BENCH.format(exclusion=exclusion))
    return path


def test_a_plan_empty_on_this_device_is_refused_at_the_exclusions_as_run_does(tmp_path):
    bench = write(tmp_path, "{device: cpu}")
    out = tmp_path / "ab"
    code, _, err = invoke("ab", "--bench", str(bench), "--device", "cpu", "--switch", "KB_X",
                          "--a", "0", "--b", "1", "--out", str(out))
    assert (code, err) == (EXIT_USAGE, f"{bench}:9: exclude: the plan for device cpu is "
                           "empty: the exclusions drop every cell on cpu\n")
    assert invoke("run", "--bench", str(bench), "--device", "cpu")[2] == err  # the same
    assert not out.exists()


def test_variants_without_a_twin_are_refused_at_the_exclusions(tmp_path):
    bench = write(tmp_path, "{variant: slower}")
    code, _, err = invoke("ab", "--bench", str(bench), "--device", "cpu", "--switch",
                          "variant", "--a", "base", "--b", "slower", "--out",
                          str(tmp_path / "ab"))
    assert (code, err) == (EXIT_USAGE, f"{bench}:9: exclude: the A/B's plan for device cpu "
                           "is empty: no cell of base has a twin of slower among the cells "
                           "chosen on cpu: the exclusions drop every twin\n")


def test_variants_without_a_twin_among_the_cells_chosen_are_refused_at_only(tmp_path):
    bench = write(tmp_path, "{variant: slower, work_us: 100}")
    code, _, err = invoke("ab", "--bench", str(bench), "--device", "cpu", "--switch",
                          "variant", "--a", "base", "--b", "slower", "--only", "work_us=100",
                          "--out", str(tmp_path / "ab"))
    assert (code, err) == (EXIT_USAGE, "--only: no cell of base has a twin of slower among "
                           "the cells chosen on cpu\n")
