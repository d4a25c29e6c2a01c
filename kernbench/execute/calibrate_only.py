"""`kernbench calibrate --only PART`: one part of a profile (its GEMM, memory or host
ceilings) measured again, every other figure of the profile kept as it was.

The profile's `calibration` keeps the whole calibration's provenance (`date`, the duty
and timers it was taken with); its `method` has the part's text replaced by the one just
measured, every other part's kept; the part adds its own notes (`memory_method`, ...),
its date (`memory_date`) and its name to `remeasured` (docs/adr/0078)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from kernbench.errors import UserError
from kernbench.execute.calibrate import (
    PARTS,
    WHOLE_PARTS,
    Measured,
    beside_datasheet,
    measure_cpu,
    measure_cuda,
)
from kernbench.execute.calibrate_setup import Sizes, method_parts, method_text
from kernbench.results.provenance import utc_now
from kernbench.spec.models import HardwareProfile

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
            peaks[dtype] = beside_datasheet(peaks.get(dtype), rate)
        update["peak_tflops"] = peaks
    elif part == "memory":
        update["memory_gbs"] = beside_datasheet(base.memory_gbs, measured.memory_gbs)
    else:
        update["host_to_device_gbs"] = beside_datasheet(base.host_to_device_gbs,
                                                         measured.host_to_device_gbs)
        update["device_to_host_gbs"] = beside_datasheet(base.device_to_host_gbs,
                                                         measured.device_to_host_gbs)
    calibration = dict(base.calibration)
    calibration.update(measured.notes)
    calibration["method"] = method_remeasured(
        base.kind, str(base.calibration.get("method", "")), part, measured.method)
    calibration[f"{part}_date"] = utc_now(now)
    before = calibration.get("remeasured", [])
    earlier = before if isinstance(before, list) else [str(before)]
    calibration["remeasured"] = sorted({*earlier, part})
    update["calibration"] = calibration
    # Validated again: the model checks what model_copy would let through.
    return HardwareProfile.model_validate({**base.model_dump(), **update})


def method_remeasured(kind: str, kept: str, part: str, measured: str) -> str:
    """The profile's `method` text (`kept`) with `part`'s text replaced by the one just
    `measured`, every other part's and how they were timed kept as they were; the
    part's own timing follows its text where it differs (another timer). A text no
    whole calibration wrote (by hand, or older) keeps all it said, the part's after it."""
    whole, old, new = WHOLE_PARTS[kind], method_parts(kind, kept), method_parts(kind, measured)
    if old is None or new is None or len(old[0]) != len(whole) or part not in whole \
            or len(new[0]) != 1:
        again = f"{part} measured again: {measured}"
        return f"{kept}; then {again}" if kept else again
    texts, timed = old
    (text,), measured_timed = new
    texts[whole.index(part)] = text if measured_timed == timed else f"{text} ({measured_timed})"
    return method_text(kind, texts, timed)

