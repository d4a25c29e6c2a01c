"""`kernbench calibrate`: measure this machine's ceilings and write a hardware profile.

Measured figures are written beside the datasheet's, never over them: the models use the
measured one where there is one, and a reader can see how far the card is from its
datasheet. A calibration measures three parts, each in its own module: the GEMM ceilings
(`calibrate_gemm`), the memory ceiling (`calibrate_memory`: the best of several copies,
bytes read + written) and the host link's (`calibrate_host`); `calibrate_only` measures
one part again into an existing profile.
"""

from __future__ import annotations

import datetime as dt
import platform
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import yaml

from kernbench.errors import UserError
from kernbench.execute.calibrate_gemm import gemm_ceilings_cpu, gemm_ceilings_cuda
from kernbench.execute.calibrate_host import host_ceilings_cuda
from kernbench.execute.calibrate_memory import memory_ceiling_cpu, memory_ceiling_cuda
from kernbench.execute.calibrate_setup import Part, Sampler, Sizes, method_text
from kernbench.results import atomic
from kernbench.results.outpaths import out_file
from kernbench.results.provenance import cpu_model, utc_now
from kernbench.spec.fields import Scalar
from kernbench.spec.models import Ceiling, HardwareProfile

MODELINE = "# yaml-language-server: $schema=../../schemas/hardware.schema.json\n"
PARTS = ("gemm", "memory", "host")  # what `--only` may measure again
WHOLE_PARTS = {"cuda": PARTS, "cpu": ("gemm", "memory")}  # a whole calibration's, by kind


@dataclass
class Measured:
    """What one calibration read off the machine (rates in TFLOP/s and GB/s); a part not
    measured (`--only`) leaves its figures empty."""

    device_name: str
    kind: str
    peak_tflops: dict[str, float]
    memory_gbs: float | None
    host_to_device_gbs: float | None = None
    device_to_host_gbs: float | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    method: str = ""
    notes: dict[str, Scalar] = field(default_factory=dict)


def calibrate(
    device: str,
    name: str | None = None,
    datasheet: HardwareProfile | None = None,
    sizes: Sizes | None = None,
    measure: Callable[[Sizes], Measured] | None = None,
    duty: str | None = None,
) -> HardwareProfile:
    """Measure `device` ("cpu" or "cuda") and return its profile; `datasheet` supplies the
    datasheet figures, name, description and match strings kept beside the measured ones.
    `duty`: the timer duty the CUDA ceilings are sampled under (default: `sizes`' timer's).
    `measure` replaces the measurement (tests)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; known: cpu, cuda")
    sizes = sizes or Sizes()
    if duty is not None:
        sizes = replace(sizes, timer=sizes.timer.model_copy(update={"duty": duty}))
    if measure is None:
        measure = measure_cuda if device == "cuda" else measure_cpu
    return profile_from(measure(sizes), name=name, datasheet=datasheet)


def profile_from(
    measured: Measured,
    name: str | None = None,
    datasheet: HardwareProfile | None = None,
    now: dt.datetime | None = None,
) -> HardwareProfile:
    """The measured figures beside the datasheet's (a datasheet's old measured values are
    replaced, its datasheet values kept)."""
    sheet = datasheet
    peaks: dict[str, Ceiling] = {}
    dtypes = list(sheet.peak_tflops) if sheet else []
    dtypes += [d for d in measured.peak_tflops if d not in dtypes]
    for dtype in dtypes:
        old = sheet.peak_tflops.get(dtype) if sheet else None
        peaks[dtype] = _ceiling(old, measured.peak_tflops.get(dtype))
    calibration: dict[str, Scalar] = {
        "date": utc_now(now),
        "device_name": measured.device_name,
        "host": platform.node(),
        "method": measured.method,
        **measured.notes,
    }
    return HardwareProfile(
        name=name or (sheet.name if sheet else slug(measured.device_name)),
        description=sheet.description if sheet else f"{measured.device_name}, measured",
        kind=measured.kind,
        match=list(sheet.match) if sheet and sheet.match else [measured.device_name],
        peak_tflops=peaks,
        memory_gbs=_ceiling(sheet.memory_gbs if sheet else None, measured.memory_gbs),
        host_to_device_gbs=beside_datasheet(
            sheet.host_to_device_gbs if sheet else None, measured.host_to_device_gbs
        ),
        device_to_host_gbs=beside_datasheet(
            sheet.device_to_host_gbs if sheet else None, measured.device_to_host_gbs
        ),
        interconnect_gbs=sheet.interconnect_gbs if sheet else None,
        l2_bytes=measured.l2_bytes or (sheet.l2_bytes if sheet else None),
        memory_bytes=measured.memory_bytes or (sheet.memory_bytes if sheet else None),
        calibration=calibration,
    )


def _ceiling(old: Ceiling | None, measured: float | None) -> Ceiling:
    return Ceiling(
        datasheet=old.datasheet if old else None,
        measured=measured if measured is not None else (old.measured if old else None),
    )


def beside_datasheet(old: Ceiling | None, measured: float | None) -> Ceiling | None:
    """`measured` beside `old`'s datasheet figure; `old` kept where nothing was measured
    (a part `--only` did not measure), None where there is neither."""
    if old is None and measured is None:
        return None
    return _ceiling(old, measured)


def slug(text: str) -> str:
    """A profile name from a device name: "NVIDIA H200" -> "nvidia-h200"."""
    value = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return value[:80] or "device"


def write_profile(profile: HardwareProfile, path: Path, modeline: str = MODELINE) -> None:
    """The profile as YAML, with the schema modeline editors read (`modeline`: a profile
    updated in place keeps its own, which points from its folder)."""
    data = profile.model_dump(mode="json", exclude_none=True)
    path = out_file(path)
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    atomic.write_text(path, modeline + text)



def measure_cpu(sizes: Sizes, parts: Sequence[str] = PARTS) -> Measured:
    if "host" in parts and tuple(parts) != PARTS:
        raise UserError("--only host: a CPU has no host link to measure")
    done: list[Part] = []
    peaks: dict[str, float] = {}
    memory = None
    if "gemm" in parts:
        gemm = gemm_ceilings_cpu(sizes)
        peaks = gemm.peak_tflops or {}
        done.append(gemm)
    if "memory" in parts:
        copy = memory_ceiling_cpu(sizes)
        memory = copy.gbs
        done.append(copy)
    notes: dict[str, Scalar] = {key: value for part in done for key, value in part.notes.items()}
    if tuple(parts) == PARTS:
        notes["numpy"] = np.__version__
    method = method_text("cpu", [part.method for part in done],
                         f"median of {sizes.reps} after one warm-up call")
    return Measured(
        device_name=cpu_model(), kind="cpu", peak_tflops=peaks, memory_gbs=memory,
        method=method, notes=notes,
    )


def measure_cuda(sizes: Sizes, parts: Sequence[str] = PARTS) -> Measured:
    """The ceilings of `parts`. Only a whole calibration writes the notes that describe
    it all (torch, cuda, the duty, the timers): a part measured again adds its own."""
    import torch

    sampler = Sampler()
    done: list[Part] = []
    measured = Measured(device_name="", kind="cuda", peak_tflops={}, memory_gbs=None)
    if "gemm" in parts:
        gemm = gemm_ceilings_cuda(sizes, sampler)
        measured.peak_tflops = gemm.peak_tflops or {}
        done.append(gemm)
    if "memory" in parts:
        memory = memory_ceiling_cuda(sizes, sampler)
        measured.memory_gbs = memory.gbs
        done.append(memory)
    if "host" in parts:
        host = host_ceilings_cuda(sizes, sampler)
        measured.host_to_device_gbs = host.host_to_device_gbs
        measured.device_to_host_gbs = host.device_to_host_gbs
        done.append(host)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    measured.device_name = props.name
    measured.notes = {key: value for part in done for key, value in part.notes.items()}
    if tuple(parts) == PARTS:
        measured.notes = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
                          "duty": sizes.duty, **measured.notes,
                          "timer": ", ".join(sorted(sampler.used))}
        measured.l2_bytes = int(props.L2_cache_size)
        measured.memory_bytes = int(props.total_memory)
    measured.method = method_text("cuda", [part.method for part in done],
                                  f"{sampler.timed_by()}, L2 flushed, {sizes.duty} duty")
    return measured
