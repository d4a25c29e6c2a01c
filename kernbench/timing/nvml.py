"""SM clock and clock-event (throttle) reasons through NVML, read once per batch of samples.

pynvml is optional: without it (or without a driver) every reader answers None and the
timers leave `sm_clock_mhz` and `throttled` empty rather than guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# NVML's clock-event reason bits (nvmlClocksEventReason*, formerly *ThrottleReason*).
# Copied as numbers so the classification is testable without pynvml.
REASON_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
# Reasons that mean the card ran slower than it would have: a sample taken under one of
# these is flagged. Idle, application clocks and sync boost describe settings, not a slowdown.
THROTTLING = frozenset(
    {
        "sw_power_cap",
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
    }
)
_THROTTLING_MASK = sum(REASON_BITS[name] for name in THROTTLING)

_SM_CLOCK = 1  # NVML_CLOCK_SM


def reason_names(mask: int) -> list[str]:
    return [name for name, bit in REASON_BITS.items() if mask & bit]


def is_throttled(mask: int) -> bool:
    return bool(mask & _THROTTLING_MASK)


@dataclass(frozen=True)
class Reading:
    sm_clock_mhz: float
    reasons: int
    power_w: float | None = None  # board power draw, where NVML reports it

    @property
    def throttled(self) -> bool:
        return is_throttled(self.reasons)


def _nvml() -> Any | None:
    try:
        import pynvml  # lazy: optional (see above)
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no device: NVML readings are simply absent
        return None
    return pynvml


class ClockReader:
    """Reads one GPU's SM clock and clock-event reasons; `read()` is None when NVML is not there.

    The GPU is found by UUID when given (CUDA and NVML can number devices differently
    under CUDA_VISIBLE_DEVICES), else by NVML index.
    """

    def __init__(self, uuid: str | None = None, index: int = 0) -> None:
        self._nvml: Any = _nvml()
        self._handle: Any = None
        if self._nvml is None:
            return
        try:
            if uuid:
                text = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
                self._handle = self._nvml.nvmlDeviceGetHandleByUUID(text)
            else:
                self._handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:
            self._handle = None

    @property
    def available(self) -> bool:
        return self._handle is not None

    def read(self) -> Reading | None:
        if self._handle is None:
            return None
        nvml = self._nvml
        try:
            clock = nvml.nvmlDeviceGetClockInfo(self._handle, _SM_CLOCK)
            reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
                nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            reasons = reasons_fn(self._handle)
        except Exception:
            return None
        try:
            power_w: float | None = nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0
        except Exception:  # some boards and VMs report no power
            power_w = None
        return Reading(sm_clock_mhz=float(clock), reasons=int(reasons), power_w=power_w)

    def name(self) -> str | None:
        if self._handle is None:
            return None
        value = self._nvml.nvmlDeviceGetName(self._handle)
        return value.decode() if isinstance(value, bytes) else str(value)


def device_name(index: int = 0) -> str | None:
    """The NVML name of GPU `index` ("NVIDIA H200"), or None without NVML."""
    return ClockReader(index=index).name()


def driver_version() -> str | None:
    """The driver's version ("580.95.05"), or None without NVML."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        value = nvml.nvmlSystemGetDriverVersion()
    except Exception:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
