#!/usr/bin/env bash
# The H200's memory ceiling measured again, alone (`kernbench calibrate --only memory`,
# docs/adr/0078): the best of torch copy_ at 2048 and 256 MiB and a Triton streaming
# copy, for the default (h200, sustained) and the isolated (h200-isolated) profiles, each
# starting from a copy of the committed profile, every other figure kept. Writes
# OUT_DIR/h200.yaml, OUT_DIR/h200-isolated.yaml and OUT_DIR/memory-ceiling.log (each
# method's GB/s). About a minute on an H200.
# Usage: bash scripts/gpu_memory_ceiling.sh OUT_DIR   (needs .whl/ from ../shared/tools/gpu-wheels.sh)
set -uo pipefail
out=${1:?OUT_DIR}
# A profile in configs/hardware would hide the committed one the copies start from.
if compgen -G "configs/hardware/h200*.yaml" > /dev/null; then
  echo "configs/hardware/h200*.yaml exist here; remove them first:" configs/hardware/h200*.yaml >&2
  exit 2
fi
mkdir -p "$out"
source scripts/gpu_env.sh
log="$out/memory-ceiling.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv >> "$log"
git log -1 --format='tree of commit %H' >> "$log" 2>/dev/null
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
status=0
for name in h200 h200-isolated; do
  cp "kernbench/data/hardware/$name.yaml" "$out/$name.yaml"
  timed "$name" timeout 50 python3 -m kernbench calibrate --device cuda --only memory \
    --name "$name" --out "$out/$name.yaml" || status=1
  # Each method's GB/s, the winner and any skip or refusal, as the profile recorded them.
  python3 - "$out/$name.yaml" <<'PY' | tee -a "$log"
import sys, yaml
profile = yaml.safe_load(open(sys.argv[1]))
print(profile["name"], "memory_gbs", profile["memory_gbs"])
for key, value in profile["calibration"].items():
    if key.startswith("memory_") or key == "remeasured":
        print(" ", key, value)
PY
done
grep WALL "$log"
exit $status
