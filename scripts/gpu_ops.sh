#!/usr/bin/env bash
# The operator benches on an H200 (issue 15; see docs/gpu-runs.md), in one call: whether
# Triton reads the compiler switch (scripts/mma_switch_check.py), ops-moe's three benches
# in both backends, then the switch's A/B over their flag_gems variants (6 rounds, A/A;
# round 1's A side records every autotune choice, the other sides replay them).
# Usage: [ONLY="tokens=1,1024,16384"] [RUN_TIMEOUT=S] [AB_TIMEOUT=S]
#   bash scripts/gpu_ops.sh OUT_DIR [STEP...]
# STEP: check, runs, ab-router, ab-topk, ab-masked-select (default: check runs ab-router).
# Needs .whl/ with the pydantic wheels (../shared/tools/gpu-wheels.sh) and FlagGems'
# (scripts/gpu_op_wheels.sh).
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out" /tmp/ops
source scripts/gpu_env.sh
log="$out/ops.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv > "$log"
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
only=()
for selection in ${ONLY:-tokens=1,1024,16384}; do only+=(--only "$selection"); done
steps=("${@:2}")
[ ${#steps[@]} -eq 0 ] && steps=(check runs ab-router)
for step in "${steps[@]}"; do
  case $step in
    check) timed mma-switch timeout 120 python3 scripts/mma_switch_check.py \
      --out "$out/mma-switch.json" ;;
    runs) for op in topk masked-select router; do
        timed "run-$op" timeout "${RUN_TIMEOUT:-150}" python3 -m kernbench run \
          --bench "ops-moe-$op" --device cuda --rounds 1 "${only[@]}" --out "/tmp/ops/run-$op"
      done ;;
    ab-*) op=${step#ab-}
      timed "$step" timeout "${AB_TIMEOUT:-300}" python3 -m kernbench ab --bench "ops-moe-$op" \
        --device cuda --switch DISABLE_MMA_V3 --a 0 --b 1 --rounds 6 --aa \
        --only variant=flag_gems "${only[@]}" --out "/tmp/ops/ab-$op" ;;
    *) echo "unknown step $step" | tee -a "$log" ;;
  esac
done
tar czf "$out/ops.tgz" -C /tmp/ops --exclude=tasks --exclude=journal .
grep WALL "$log"
