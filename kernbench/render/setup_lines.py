"""The report's lines on the machine and the ceilings: what a reader needs once, at the top,
to trust or discount every number below it."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from kernbench.results.model import Results
from kernbench.spec.hardware import calibrated_duty, is_nominal


def machine_text(results: Results) -> str:
    """The device, its driver, CUDA and host, and the SM clock the samples ran at (NVML's
    readings, one a batch): a GEMM at 1,400 MHz is not one at 1,980."""
    prov = results.provenance
    parts = [f"{prov.get('device_name') or prov.get('cpu') or results.device} ({results.device})"]
    for key, label in (("driver", "driver"), ("cuda", "CUDA"), ("host", "host")):
        if prov.get(key):
            parts.append(f"{label} {prov[key]}")
    text = ", ".join(parts)
    clocks = [mhz for c in results.cells for r in c.rounds for mhz in r.sm_clock_mhz]
    if clocks:
        low, high = min(clocks), max(clocks)
        spread = f" (from {low:.0f} to {high:.0f})" if high > low else ""
        text += f"; SM clock while sampling: median {statistics.median(clocks):.0f} MHz{spread}"
    return text


def ceilings_text(results: Results) -> str | None:
    """The hardware profile the ceilings, `% of dtype peak` and the figures' lines come from."""
    profile = results.hardware_profile()
    if profile is None:
        return None
    if is_nominal(profile):
        return f"hardware profile {profile.name} (nominal figures, no machine's)"
    calibration = profile.calibration
    duty = calibrated_duty(profile)
    if duty is None:
        return f"hardware profile {profile.name} (datasheet figures)"
    date = str(calibration.get("date", ""))[:10]
    on = f" on {calibration['device_name']}" if calibration.get("device_name") else ""
    return (f"hardware profile {profile.name} (measured{on}"
            f"{' ' + date if date else ''}{_measured_again(calibration)}, {duty} duty; "
            f"the datasheet where not measured)")


def _measured_again(calibration: Mapping[str, object]) -> str:
    """", memory measured again 2026-12-04": the parts `calibrate --only` measured after the
    calibration's date, each with its own (docs/adr/0078)."""
    parts = calibration.get("remeasured") or []
    texts = []
    for part in parts if isinstance(parts, list) else [parts]:
        date = str(calibration.get(f"{part}_date", ""))[:10]
        texts.append(f", {part} measured again{' ' + date if date else ''}")
    return "".join(texts)
