"""What CUPTI's records (torch.profiler) give the cupti timer on this GPU, per kernel kind:
the record kinds seen, how many device records each sample range holds, and the cupti
timer's median against the isolated event timer's. A check before a sweep trusts them.

    python3 scripts/cupti_probe.py > probe.json
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def kernels() -> dict[str, object]:
    import torch

    from kernbench.kernels import gemm
    from kernbench.kernels.base import Kernel

    x = torch.randn(1 << 16, device="cuda")
    return {
        "cublas-bf16-4096": gemm.make(M=4096, N=4096, K=4096, dtype="bf16", backend="torch",
                                      device="cuda"),
        "triton-fp16-2048": gemm.make(M=2048, N=2048, K=2048, dtype="fp16", backend="triton",
                                      device="cuda", autotune=False),
        "add-65536": Kernel(run=lambda: torch.add(x, x), synchronize=torch.cuda.synchronize),
    }


def probe(name: str, kernel: object) -> dict[str, object]:
    from kernbench.spec.timer_model import TimerSpec
    from kernbench.timing import cupti
    from kernbench.timing.cuda import EventTimer

    spec = TimerSpec(warmup_s=0.02, budget_s=0.05, min_samples=10, duty="isolated")
    with cupti.KernelRecords() as records:
        for _ in range(3):
            with records.sample():
                kernel.run()  # type: ignore[attr-defined]
        kernel.synchronize()  # type: ignore[attr-defined]
    activities = records.activities()
    measured = cupti.CuptiTimer().measure(kernel, spec)  # type: ignore[arg-type]
    events = EventTimer().measure(kernel, spec)  # type: ignore[arg-type]
    return {
        "kinds": dict(Counter(f"{a.kind}{' on device' if a.on_device else ''}"
                              for a in activities)),
        "device_names": sorted({a.name[:80] for a in activities if a.on_device}),
        "records": [vars(r) for r in cupti.sample_records(activities)],
        "timer": measured.timer,
        "cupti_median_us": statistics.median(measured.samples_s) * 1e6,
        "isolated_event_median_us": statistics.median(events.samples_s) * 1e6,
        "extra": {k: v for k, v in measured.extra.items()
                  if k in ("event_median_s", "kernels_per_sample", "records_overhead_s",
                           "kernel_records_failed")},
    }


def main() -> None:
    import torch

    out: dict[str, object] = {"torch": torch.__version__, "cupti_available": None}
    from kernbench.timing import cupti

    out["cupti_available"] = cupti.available()
    for name, kernel in kernels().items():
        try:
            out[name] = probe(name, kernel)
        except Exception as exc:  # noqa: BLE001 - a probe reports, never stops
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
