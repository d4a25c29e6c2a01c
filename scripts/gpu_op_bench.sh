#!/usr/bin/env bash
# One op bench on one GPU, ROUNDS rounds (default 1), into runs/NAME/run-<UTC>/ (results.json,
# report, figures/), packed into OUT_DIR; the log in OUT_DIR/NAME.log with the machine, the
# commit and the libraries. The shape of scripts/gpu_attention.sh and scripts/gpu_norm.sh.
# Usage: [ONLY="KEY=V[,V] ..."] [ROUNDS=N] [RUN_TIMEOUT=S] bash scripts/gpu_op_bench.sh BENCH NAME OUT_DIR
#   ONLY: the cells to run (`--only` of each KEY=V, e.g. ONLY="variant=triton op=rms_norm")
# Needs .whl/ with the pydantic wheels (../shared/tools/gpu-wheels.sh), run from the
# repository's root. Exit: the run's (0 every cell ok, 1 a cell failed, 124 timed out).
set -uo pipefail
bench=${1:?usage: bash scripts/gpu_op_bench.sh BENCH NAME OUT_DIR}
name=${2:?usage: bash scripts/gpu_op_bench.sh BENCH NAME OUT_DIR}
out=${3:?usage: bash scripts/gpu_op_bench.sh BENCH NAME OUT_DIR}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
log="$out/$name.log"
cd "$(dirname "$0")/.." || exit 2
if ! ls .whl/*.whl > /dev/null 2>&1; then
  echo "no wheels in $PWD/.whl/ (pydantic and its dependencies): see scripts/gpu_env.sh" \
    | tee -a "$log"
  exit 2
fi
source scripts/gpu_env.sh >> "$log" 2>&1
# shellcheck source=scripts/timed.sh
. scripts/timed.sh
{
  date -u +"start %Y-%m-%dT%H:%M:%SZ"
  git log -1 --format="commit %H %s" 2>/dev/null || echo "commit unknown (no .git)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda,
      'cudnn', torch.backends.cudnn.version(), 'gpu', torch.cuda.get_device_name())
import triton; print('triton', triton.__version__)"
} >> "$log" 2>&1
only=()
for key in ${ONLY:-}; do only+=(--only "$key"); done
timed plan python3 -m kernbench plan --bench "$bench" --device cuda ${only[@]+"${only[@]}"}
# Under the git-ignored runs/, so the run records paths relative to the checkout; packed
# into OUT_DIR afterwards (journal and tasks left out).
run_dir="runs/$name/run-$(date -u +%Y%m%dT%H%M%SZ)"
timed run timeout "${RUN_TIMEOUT:-420}" python3 -m kernbench run --bench "$bench" \
  --device cuda --rounds "${ROUNDS:-1}" ${only[@]+"${only[@]}"} --out "$run_dir"
code=$?
tar cJf "$out/$(basename "$run_dir").tar.xz" -C "$(dirname "$run_dir")" \
  --exclude=tasks --exclude=journal "$(basename "$run_dir")"
# The cells that failed, with their reasons, where a reader of the log looks first.
grep -iE "failed|wrong result|cannot run|runs on cuda" "$log" | tail -n 40
echo "results: $run_dir, packed in $out/$(basename "$run_dir").tar.xz"
exit $code
