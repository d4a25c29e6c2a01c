#!/usr/bin/env bash
# The operator benches on an H200 (issue 15; see docs/gpu-runs.md), in one call: whether
# Triton reads the compiler switch (scripts/mma_switch_check.py), ops-moe's three benches
# in both backends, then the switch's A/B over their flag_gems variants (6 rounds, A/A;
# round 1's A side records every autotune choice, the other sides replay them).
# Usage: [ONLY=KEY=V...] [RUN_ONLY_router=...] [AB_ONLY_topk=...] [RUN_TIMEOUT=S]
#   [AB_TIMEOUT=S] bash scripts/gpu_ops.sh OUT_DIR [STEP...]
# STEP: check, runs, ab-router, ab-topk, ab-masked-select (default: all five; on the H200
# the runs took 2 minutes, the 6-round A/Bs 194 s (router), ~225 s (topk: ~37 s a round)
# and ~210 s (masked_select), so a call of 10 minutes holds two A/Bs; an A/B cut by its
# limit goes on with `kernbench ab --resume`). ONLY selects the cells of every step; RUN_ONLY_<op>
# adds to it for the run of one op, AB_ONLY_<op> for its A/B (op: topk, masked_select,
# router).
# Needs .whl/ with the pydantic wheels (../shared/tools/gpu-wheels.sh) and FlagGems'
# (scripts/gpu_op_wheels.sh).
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out" /tmp/ops
source scripts/gpu_env.sh
log="$out/ops.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv >> "$log"
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
# Cells that fit one call. FlagGems' mm tunes 162 configs per key, each compiled once per
# specialization (M or N of 1, or divisible by 16) and dtype, ~70 s a set on the H200: the
# router's cells share one set, and its A/B the run's (Triton's cache then holds them).
: "${RUN_ONLY_topk:=tokens=1,16384}"
: "${AB_ONLY_topk:=tokens=1,16384 experts=256}"
: "${RUN_ONLY_masked_select:=tokens=1,16384}"
: "${AB_ONLY_masked_select:=tokens=1,16384 hidden=7168}"
: "${RUN_ONLY_router:=tokens=4096,16384 hidden=7168 experts=64,256 dtype=bf16}"
: "${AB_ONLY_router:=tokens=4096,16384 hidden=7168 experts=256 dtype=bf16}"
selection() {  # selection VAR: --only flags for ONLY and the space-separated KEY=V of VAR
  local key
  for key in ${ONLY:-} ${!1:-}; do printf -- '--only\n%s\n' "$key"; done
}
timeouts() {  # seconds for one op: topk, masked_select, router
  case $1 in topk) echo "$2" ;; masked_select) echo "$3" ;; router) echo "$4" ;; esac
}
steps=("${@:2}")
[ ${#steps[@]} -eq 0 ] && steps=(check runs ab-router ab-topk ab-masked-select)
for step in "${steps[@]}"; do
  case $step in
    check) timed mma-switch timeout 60 python3 scripts/mma_switch_check.py \
      --out "$out/mma-switch.json" ;;
    runs) for op in topk masked_select router; do
        mapfile -t only < <(selection "RUN_ONLY_$op")
        timed "run-$op" timeout "${RUN_TIMEOUT:-$(timeouts $op 60 45 150)}" python3 -m kernbench \
          run --bench "ops-moe-${op//_/-}" --device cuda --rounds 1 "${only[@]}" \
          --out "/tmp/ops/run-$op"
      done ;;
    ab-*) op=${step#ab-} && op=${op//-/_}
      mapfile -t only < <(selection "AB_ONLY_$op")
      timed "$step" timeout "${AB_TIMEOUT:-$(timeouts $op 240 230 220)}" python3 -m kernbench ab \
        --bench "ops-moe-${op//_/-}" --device cuda --switch DISABLE_MMA_V3 --a 0 --b 1 \
        --rounds 6 --aa --only variant=flag_gems "${only[@]}" --out "/tmp/ops/ab-$op" ;;
    *) echo "unknown step $step" | tee -a "$log" ;;
  esac
done
tar czf "$out/ops.tgz" -C /tmp/ops --exclude=tasks --exclude=journal .
grep WALL "$log"
