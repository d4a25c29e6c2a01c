#!/usr/bin/env bash
# The committed H200x2 collective data, in one call of a two-GPU machine:
# the milestone-1h-ccl sweep (NCCL over NVLink), then the plain torch.distributed
# reference loop at the same sizes, for the busbw comparison at 1 GiB.
# Usage: bash scripts/gpu_ccl.sh OUT_DIR   (needs the pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
timeout 420 python3 -m kernbench run --bench milestone-1h-ccl --device cuda --rounds 2 \
  --out /tmp/ccl > "$out/ccl.log" 2>&1
echo "ccl exit $?" >> "$out/ccl.log"
sizes=4194304,67108864,268435456,1073741824
for dtype in fp32 bf16; do
  timeout 90 python3 -m kernbench.execute.launch --nproc-per-node 2 scripts/ccl_reference.py \
    --sizes $sizes --dtype $dtype --inplace --out "$out/reference-$dtype.json" \
    >> "$out/reference.log" 2>&1
done
tar czf "$out/ccl.tgz" -C /tmp --exclude=tasks ccl
tail -n 3 "$out/ccl.log"
