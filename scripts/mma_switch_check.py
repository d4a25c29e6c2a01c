"""Whether the installed Triton reads a compiler switch before an A/B relies on it: one
small tl.dot kernel compiled in a fresh process with the switch at 0 and at 1, its PTX
searched for Hopper's warpgroup MMA (wgmma) and Ampere's mma.sync.

    python scripts/mma_switch_check.py [--switch DISABLE_MMA_V3] [--out FILE]

A switch that Triton reads shows wgmma at 0 and none at 1 on an sm_90 GPU (issue 15).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = r"""
import json, torch, triton, triton.language as tl

@triton.jit
def dot(a, b, c, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i[:, None] * N + i[None, :])
    y = tl.load(b + i[:, None] * N + i[None, :])
    tl.store(c + i[:, None] * N + i[None, :], tl.dot(x, y))

n = 64
a = torch.randn(n, n, device="cuda", dtype=torch.float16)
b = torch.randn(n, n, device="cuda", dtype=torch.float16)
c = torch.empty(n, n, device="cuda", dtype=torch.float32)
ptx = dot[(1,)](a, b, c, N=n, num_warps=4).asm["ptx"]
correct = torch.allclose(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
print(json.dumps({"wgmma": "wgmma" in ptx, "mma_sync": "mma.sync" in ptx,
                  "correct": bool(correct), "triton": triton.__version__}))
"""


def compile_with(switch: str, value: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="mma-switch-") as cache:
        probe = Path(cache, "probe.py")  # @triton.jit reads its function's source file
        probe.write_text(PROBE)
        env = {**os.environ, switch: value, "TRITON_CACHE_DIR": str(Path(cache, "triton"))}
        done = subprocess.run([sys.executable, str(probe)], env=env, capture_output=True,
                              text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switch", default="DISABLE_MMA_V3")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    found = {value: compile_with(args.switch, value) for value in ("0", "1")}
    read = found["0"].get("wgmma") is True and found["1"].get("wgmma") is False
    report = {"switch": args.switch, "by_value": found, "changes_codegen": read}
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
