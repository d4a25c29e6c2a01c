#!/usr/bin/env bash
# The collective kernel's CUDA path on one GPU (a communicator of one rank), 1 KiB to 1 GiB,
# fp32, one round: graph replays (the default, ADR 0046) and eager calls
# (KERNBENCH_COLLECTIVE_GRAPHS=0), so the capture, the cold ring of graphs and their
# clean-up run at every size where no second GPU is lent. A rank of one moves no data
# between GPUs: the times say what a call costs one GPU, not what a collective costs.
# Usage: [MODES="graphs eager"] [SIZES=1024,1048576] bash scripts/gpu_ccl_one_gpu.sh OUT_DIR
#   (pydantic wheels in .whl/; SIZES: only these cells' bytes, default every size)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
work=/tmp/ccl-one
mkdir -p "$work"
python3 scripts/bench_variant.py benches/milestone-1h-ccl.yaml "$work/milestone-1h-ccl-1gpu.yaml" \
  'name: milestone-1h-ccl-1gpu' 'requires: {world_size: 1}' 'axes: {world_size: [1]}' \
  --drop data > /dev/null
{
  only=()
  [ -n "${SIZES:-}" ] && only=(--only "bytes=$SIZES")
  for mode in ${MODES:-graphs eager}; do
    graphs=1
    [ "$mode" = eager ] && graphs=0
    KERNBENCH_COLLECTIVE_GRAPHS=$graphs timeout "${KERNBENCH_TIMEOUT:-200}" python3 -m kernbench \
      run --bench "$work/milestone-1h-ccl-1gpu.yaml" --device cuda --only dtype=fp32 \
      --rounds 1 --out "$work/$mode" "${only[@]}"
    echo "kernbench $mode exit $?"
  done
  python3 - "$work" <<'PY'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
runs = {m: json.loads((work / m / "results.json").read_text()) for m in ("graphs", "eager")
        if (work / m / "results.json").exists()}
print("| cell | graphs µs | eager µs | ring | graphs captured | capture s | host / GPU per sample "
      "| settled | settle s |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
eager = {c["id"]: c for c in runs.get("eager", {}).get("cells", [])}
for cell in runs.get("graphs", {}).get("cells", []):
    if not cell["rounds"]:
        print(f"| {cell['id']} | {cell.get('reason')} |")
        continue
    r, e = cell["rounds"][0], cell["rounds"][0]["extra"]
    other = eager.get(cell["id"])
    e_us = f"{other['rounds'][0]['median_s'] * 1e6:.2f}" if other and other["rounds"] else "-"
    pace = e.get("host_enqueue_s", 0) / e["gpu_sample_s"] if e.get("gpu_sample_s") else 0
    settle = r.get("settle") or {}
    print(f"| {cell['id'].split('/')[-1]} | {r['median_s'] * 1e6:.2f} | {e_us} | "
          f"{e.get('graph_ring', '-')} | {e.get('graphs_captured', '-')} | "
          f"{e.get('graph_capture_s', '-')} | {pace:.2f} | {settle.get('settled', '-')} | "
          f"{settle.get('seconds', 0):.3f} |")
PY
} > "$out/one-gpu.log" 2>&1
tar czf "$out/one-gpu.tgz" -C /tmp --exclude=tasks ccl-one
grep -E "exit|\| op=" "$out/one-gpu.log" | head -80
