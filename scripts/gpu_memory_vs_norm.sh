#!/usr/bin/env bash
# Does the memory ceiling miss a copy size? ops-norm's best cell (torch.compile rms_norm,
# fp32 16384x16384, 1 GiB each way) read 4303 GB/s, 0.4% over the sustained ceiling of
# 4287 (torch copy_ of 2 GiB). In one call: copies of 256 MiB to 4 GiB (torch and Triton,
# scripts/copy_sizes.py), ops-norm's rms_norm cells of 16384 rows (3 rounds), the copies
# again. Writes OUT_DIR/memory-vs-norm.log and the run under OUT_DIR (scripts/gpu_norm.sh).
# Usage: bash scripts/gpu_memory_vs_norm.sh OUT_DIR   (needs .whl/ from ../shared/tools/gpu-wheels.sh)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
log="$out/memory-vs-norm.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv >> "$log"
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
status=0
timed copies-before timeout 150 python3 scripts/copy_sizes.py || status=1
ONLY="op=rms_norm rows=16384 hidden=4096,8192,16384" ROUNDS=3 RUN_TIMEOUT=300 \
  timed norm bash scripts/gpu_norm.sh "$out" || status=1
timed copies-after timeout 150 python3 scripts/copy_sizes.py || status=1
grep -E "WALL|GB/s|skipped|refused" "$log"
exit $status
