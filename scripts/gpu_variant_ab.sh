#!/usr/bin/env bash
# The A/B of two variants on one GPU (docs/adr/0067): `kernbench ab --bench ab-gemm-variants`
# (cuBLAS against the Triton GEMM, shape by shape, 6 rounds with A/A, interleaved), timed,
# its folder packed into OUT_DIR after the call (or after it is stopped).
# Usage: [BENCH=NAME] bash scripts/gpu_variant_ab.sh OUT_DIR [kernbench ab options...]
# (needs the pydantic wheels in .whl/; AB_TIMEOUT: seconds, default 540). E.g. the same
# pairs under the milestone sweep's isolated duty and pins:
#   BENCH=milestone-1h-gemm bash scripts/gpu_variant_ab.sh OUT --switch variant --a resident \
#     --b triton --rounds 6 --aa --only dtype=bf16,fp16 --only shape=1024x1024x1024,...
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out" /tmp/ab
source scripts/gpu_env.sh
log="$out/variant-ab.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv > "$log"
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
bench=${BENCH:-ab-gemm-variants}
timed variant-ab timeout "${AB_TIMEOUT:-540}" python3 -m kernbench ab --bench "$bench" \
  --device cuda --out "/tmp/ab/$bench" "${@:2}"
tar czf "$out/variant-ab.tgz" -C /tmp/ab --exclude=tasks --exclude=journal .
grep WALL "$log"
