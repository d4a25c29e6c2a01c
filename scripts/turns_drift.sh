#!/usr/bin/env bash
# What turns do to the round-to-round spread on a machine whose speed drifts (the CPU
# proxy of a GPU's power episodes): benches/ab_drift.py's busy-wait, ±5% over a 4 s wave,
# 8 cells of 0.5 s each, 3 rounds, once with `turns: 1` and once with `turns: 8`; prints
# each run's spread of the round medians (scripts/round_spread.py's numbers, all cells).
# Usage: bash scripts/turns_drift.sh
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp benches/ab_drift.py "$work/"
for turns in 1 8; do
  cat > "$work/drift$turns.yaml" <<YAML
name: drift$turns
description: a busy-wait on a CPU whose speed drifts ±5% over 4 s, in $turns turns a round
kernel: ab_drift:make
axes:
  work_us: [100, 150, 200, 250, 300, 350, 400, 450]
timer: {warmup_s: 0.01, budget_s: 0.5, min_time_s: 0.5, rel_ci: 0.001, min_samples: 10, turns: $turns}
requires: {device: cpu}
YAML
  kernbench run --bench "$work/drift$turns.yaml" --device cpu --rounds 3 --no-figures \
    --out "$work/out$turns" > /dev/null
  python3 - "$work/out$turns/results.json" "$turns" <<'PY'
import statistics, sys
from kernbench.results.model import load
results = load(sys.argv[1])
spreads = [c.round_spread for c in results.cells if c.round_spread is not None]
print(f"turns {sys.argv[2]}: round spread over {len(spreads)} cells: "
      f"median {statistics.median(spreads):.2%}, max {max(spreads):.2%}")
PY
done
