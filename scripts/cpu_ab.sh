#!/usr/bin/env bash
# The CPU half of docs/ab-schedules.md: benches/ab-synthetic.yaml (a 10% busy-wait
# slowdown) and benches/ab-drift.yaml (a busy wait that follows a slow wave of the wall
# clock, 0 or 3% slower under its switch) under both schedules, 6 rounds with A/A, timed,
# and the drift bench's true effect from one process.
# Usage: bash scripts/cpu_ab.sh OUT_DIR
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
log="$out/ab.log"
: > "$log"
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
timed drift-reference python3 scripts/ab_reference.py --bench benches/ab-drift.yaml \
  --device cpu --pairs 100 --out "$out/drift-reference.json"
for bench in ab-synthetic ab-drift; do
  for schedule in sequential interleaved; do
    timed "$bench-$schedule" python3 -m kernbench ab --bench "$bench" --device cpu --aa \
      --rounds 6 --schedule "$schedule" --out "$out/$bench-$schedule"
  done
done
