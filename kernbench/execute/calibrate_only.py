"""`kernbench calibrate --only PART`: one part of a profile (its GEMM, memory or host
ceilings) measured again, every other figure of the profile kept as it was.

The profile's `calibration` keeps the whole calibration's provenance (`date`, `method`,
the duty and timers it was taken with); the part measured again adds its own notes
(`memory_method`, ...), its date (`memory_date`) and its name to `remeasured`
(docs/adr/0078)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from kernbench.errors import UserError
from kernbench.execute.calibrate import PARTS, Measured, measure_cpu, measure_cuda
from kernbench.execute.calibrate_setup import Sizes
from kernbench.spec.models import Ceiling, HardwareProfile

Measure = Callable[[Sizes, Sequence[str]], Measured]


def check_part(part: str) -> None:
    if part not in PARTS:
        raise UserError(f"--only: {part!r} is not a part of a calibration; choose "
                        f"{', '.join(PARTS[:-1])} or {PARTS[-1]}")


def calibrate_only(
    base: HardwareProfile,
    part: str,
    sizes: Sizes,
    measure: Measure | None = None,
    now: dt.datetime | None = None,
) -> HardwareProfile:
    """`base` with `part` measured again on its kind of device; `measure` replaces the
    measurement (tests)."""
    check_part(part)
    if measure is None:
        measure = measure_cuda if base.kind == "cuda" else measure_cpu
    return remeasured(base, part, measure(sizes, (part,)), now)


def remeasured(
    base: HardwareProfile, part: str, measured: Measured, now: dt.datetime | None = None
) -> HardwareProfile:
    """`base` with `part`'s measured figures put in, beside their datasheet figures."""
    update: dict[str, object] = {}
    if part == "gemm":
        peaks = dict(base.peak_tflops)
        for dtype, rate in measured.peak_tflops.items():
            peaks[dtype] = _beside(peaks.get(dtype), rate)
        update["peak_tflops"] = peaks
    elif part == "memory":
        update["memory_gbs"] = _beside(base.memory_gbs, measured.memory_gbs)
    else:
        update["host_to_device_gbs"] = _beside(base.host_to_device_gbs,
                                               measured.host_to_device_gbs)
        update["device_to_host_gbs"] = _beside(base.device_to_host_gbs,
                                               measured.device_to_host_gbs)
    calibration = dict(base.calibration)
    calibration.update(measured.notes)
    calibration[f"{part}_date"] = (now or dt.datetime.now(dt.timezone.utc)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    before = calibration.get("remeasured", [])
    earlier = before if isinstance(before, list) else [str(before)]
    calibration["remeasured"] = sorted({*earlier, part})
    update["calibration"] = calibration
    # Validated again: the model checks what model_copy would let through.
    return HardwareProfile.model_validate({**base.model_dump(), **update})


def _beside(old: Ceiling | None, measured: float | None) -> Ceiling | None:
    if measured is None:  # the part measured nothing here (a failed copy is an error)
        return old
    return Ceiling(datasheet=old.datasheet if old else None, measured=measured)
