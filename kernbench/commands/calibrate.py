"""`kernbench calibrate`: measure the ceilings and write them beside the datasheet's."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from kernbench.errors import UserError
from kernbench.execute.calibrate import calibrate, write_profile
from kernbench.results.provenance import device_model
from kernbench.spec import hardware
from kernbench.spec.discovery import project_root
from kernbench.spec.models import TimerSpec

DUTIES: tuple[str, ...] = get_args(TimerSpec.model_fields["duty"].annotation)


def calibrate_profile(
    device: str, out: Path | None, name: str | None, duty: str = "sustained"
) -> Path:
    if duty not in DUTIES:
        raise UserError(f"--duty: {duty!r} is not a duty; choose {' or '.join(DUTIES)}")
    device = hardware.resolve_device(device)
    try:
        datasheet = hardware.select_profile(device_model(device), device, name)
    except UserError:
        datasheet = None  # a new device: the profile will hold measured figures only
    if datasheet is not None and datasheet.name == "cpu-generic" and name is None:
        datasheet = None  # the placeholder has no datasheet to keep
    profile = calibrate(device, name=name or (datasheet.name if datasheet else None),
                        datasheet=datasheet, duty=duty)
    path = out or project_root() / "configs" / "hardware" / f"{profile.name}.yaml"
    write_profile(profile, path)
    return path
