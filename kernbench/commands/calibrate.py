"""`kernbench calibrate`: measure the ceilings and write them beside the datasheet's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from kernbench.errors import UserError
from kernbench.execute.calibrate import MODELINE, calibrate, write_profile
from kernbench.execute.calibrate_only import calibrate_only, check_part
from kernbench.execute.calibrate_setup import Sizes
from kernbench.execute.requirements import require_cuda
from kernbench.results.outpaths import out_file, out_folder
from kernbench.results.provenance import device_model
from kernbench.spec import hardware
from kernbench.spec.discovery import find_bench, project_root
from kernbench.spec.loader import load_hardware
from kernbench.spec.models import HardwareProfile
from kernbench.spec.timer_model import TimerSpec

DUTIES: tuple[str, ...] = get_args(TimerSpec.model_fields["duty"].annotation)


def calibrate_profile(
    device: str, out: Path | None, name: str | None, duty: str | None = None,
    bench: str | None = None, only: str | None = None,
) -> Path:
    """`bench`: sample the GEMMs with that bench's timer and rounds (its duty too), so its
    cells are read against ceilings taken the way they are (ADR 0049). `only`: measure
    that part again into the existing profile (`calibrate_only`), keeping the rest."""
    if only is not None:
        check_part(only)
    if name is not None:  # checked now, or the measurement is lost to the profile's check
        check_name(name)
    if duty is not None and duty not in DUTIES:
        raise UserError(f"--duty: {duty!r} is not a duty; choose {' or '.join(DUTIES)}")
    device = hardware.resolve_device(device)
    require_cuda(device)
    if device == "cpu" and duty not in (None, "sustained"):
        raise UserError("--duty: the CPU timer has no duty (its samples run back to back)")
    folder = project_root() / "configs" / "hardware"
    if out is not None:  # checked now, or the measurement is lost when it is written
        out_file(out, create=False)
    else:
        out_folder(folder, create=False)
    sizes = _bench_sizes(bench, device, duty)
    if only is not None:
        asked = duty or (sizes.duty if bench else None)
        return _remeasure(device, only, out, name, asked, folder, sizes)
    duty = duty or sizes.duty
    datasheet = _datasheet(device, name)
    if name is None and datasheet is not None and duty != "sustained":
        name = hardware.duty_variant_name(datasheet.name, duty)  # found by runs of `duty`
    profile = calibrate(device, name=name or (datasheet.name if datasheet else None),
                        datasheet=datasheet, sizes=sizes, duty=duty)
    if datasheet is not None:
        # A profile calibrated again matches what it replaces; a variant of a device's
        # profile (its ceilings under another duty) matches nothing, or it would take
        # the device's runs from that profile: runs of its duty find it by its name.
        match = datasheet.match if profile.name == datasheet.name else []
        profile = profile.model_copy(update={"match": match})
    path = out or folder / f"{profile.name}.yaml"
    write_profile(profile, path)
    return path


def _bench_sizes(bench: str | None, device: str, duty: str | None) -> Sizes:
    """The sizes a calibration measures with: `bench`'s timer and rounds on CUDA."""
    sizes = Sizes()
    spec = find_bench(bench)[0] if bench is not None else None
    if spec is not None and device == "cuda":  # the CPU's numpy loops take no bench timer
        if duty is not None and duty != spec.timer.duty:
            raise UserError(f"--duty: {duty!r} is not the duty of bench {spec.name} "
                            f"({spec.timer.duty}); leave --duty out")
        sizes = replace(sizes, timer=spec.timer, rounds=spec.rounds)
    return sizes


def _remeasure(device: str, part: str, out: Path | None, name: str | None,
               duty: str | None, folder: Path, sizes: Sizes) -> Path:
    """`--only PART`: the profile at `out` when that file exists, else the one `name` (or
    the device, and `duty`'s variant) finds, with PART measured again under the duty its
    other ceilings were taken with (`duty`: the one asked for, by --duty or --bench)."""
    if out is not None and out.is_file():
        base, modeline = load_hardware(out), out.read_text().partition("\n")[0] + "\n"
        if name is not None and name != base.name:
            raise UserError(f"--name: {name!r} is not the name of {out} ({base.name}); "
                            "--only updates that profile")
    else:
        base = hardware.select_profile(device_model(device), device, name, duty=duty)
        modeline = MODELINE
    if hardware.is_nominal(base) or base.kind != device:
        raise UserError(f"--only: profile {base.name} holds no measured {device} ceilings "
                        "to keep; calibrate it whole first")
    kept = hardware.calibrated_duty(base) or "sustained"
    if duty is not None and duty != kept:
        raise UserError(f"--duty: profile {base.name} was calibrated under {kept}; --only "
                        "measures under the duty its other ceilings were taken with")
    if device == "cuda":
        sizes = replace(sizes, timer=sizes.timer.model_copy(update={"duty": kept}))
    profile = calibrate_only(base, part, sizes)
    path = out or folder / f"{base.name}.yaml"
    write_profile(profile, path, modeline if modeline.startswith("# yaml-language") else MODELINE)
    return path


_PROFILE_NAME: TypeAdapter[Any] = TypeAdapter(
    HardwareProfile.model_fields["name"].rebuild_annotation()
)


def check_name(name: str) -> None:
    """`--name` by the rule of a profile's `name` field, in one line."""
    try:
        _PROFILE_NAME.validate_python(name)
    except ValidationError as exc:
        raise UserError(f"--name: {name!r} is not a profile name: "
                        f"{exc.errors()[0]['msg']}") from None


def _datasheet(device: str, name: str | None) -> HardwareProfile | None:
    """The profile whose datasheet figures the calibration keeps: `name`'s, else (a new
    name, or none) the one matching the device; None for a new device or the CPU
    placeholder, which has no datasheet to keep."""
    model = device_model(device)
    for wanted in ([name, None] if name is not None else [None]):
        try:
            sheet = hardware.select_profile(model, device, wanted)
        except UserError:
            continue
        return None if sheet.name == hardware.GENERIC_CPU and wanted is None else sheet
    return None  # a new device: the profile will hold measured figures only
