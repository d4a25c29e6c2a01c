"""Hardware profiles: loading them from their folders, and picking one for a device.

Profiles are searched in order: the project's `configs/hardware/` (a checkout, or the
working directory of an installed wheel), then the `hardware/` folder of each directory in
`KERNBENCH_CONFIG_PATH`, then the profiles shipped in the package (`kernbench/data/
hardware/`). A name found in an earlier folder hides the same name further down, so a
calibrated `h200` replaces the shipped one.

A profile is chosen by `--hardware NAME` (or a bench's `hardware:`) when given, else by
the longest `match` substring found in the device's name, so a more specific profile
(say "H200 NVL") wins over a general one ("H200"); for a bench of a non-default duty,
that profile's variant calibrated under it (`h200-isolated`) where one exists. A CPU with
no profile of its own gets `cpu-generic`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from kernbench.errors import UserError
from kernbench.spec.discovery import (
    existing_once,
    path_variable,
    project_root,
    yaml_files_in,
)
from kernbench.spec.loader import load_hardware
from kernbench.spec.models import Ceiling, HardwareProfile
from kernbench.spec.yaml_document import field_error, shown_path

GENERIC_CPU = "cpu-generic"
DEVICES = ("cpu", "cuda")
CONFIG_PATH_ENV = "KERNBENCH_CONFIG_PATH"


def hardware_dir(root: Path | None = None) -> Path:
    """The project's own profile folder: `configs/hardware/` under `root`."""
    return (root if root is not None else project_root()) / "configs" / "hardware"


def packaged_hardware_dir() -> Path:
    # kernbench is installed as files, never zipped: the resource is a real folder.
    return Path(str(resources.files("kernbench").joinpath("data", "hardware")))


def profile_dirs(root: Path | None = None) -> list[Path]:
    """The folders searched for profiles, first match first; each once, existing ones only.

    `root` given (tests, tools): that project's configs/hardware only."""
    if root is not None:
        folders = [hardware_dir(root)]
    else:
        folders = [
            hardware_dir(),
            *(part / "hardware" for part in path_variable(CONFIG_PATH_ENV)),
            packaged_hardware_dir(),
        ]
    return existing_once(folders)


def profile_files(root: Path | None = None) -> list[Path]:
    """Every profile file of the searched folders, folder by folder, sorted within each."""
    return [path for folder in profile_dirs(root) for path in yaml_files_in(folder)]


def load_profiles(root: Path | None = None) -> dict[str, HardwareProfile]:
    """Every profile found (see `profile_dirs`), by name."""
    return profiles_in(profile_dirs(root))


def profiles_in(folders: Sequence[Path]) -> dict[str, HardwareProfile]:
    """The profiles of `folders`, by name; an earlier folder's profile hides a later one's."""
    profiles: dict[str, HardwareProfile] = {}
    for folder in folders:
        for name, profile in _folder_profiles(folder).items():
            profiles.setdefault(name, profile)
    return profiles


def _folder_profiles(folder: Path) -> dict[str, HardwareProfile]:
    """The profiles of one folder; two files of one name there are an error."""
    profiles: dict[str, HardwareProfile] = {}
    files: dict[str, Path] = {}
    for path in yaml_files_in(folder):
        profile = load_hardware(path)
        if profile.name in profiles:
            message = (
                f"profile {profile.name!r} is also defined in {shown_path(files[profile.name])}"
            )
            raise field_error(path, ("name",), message)
        profiles[profile.name] = profile
        files[profile.name] = path
    return profiles


def select_profile(
    device_name: str,
    kind: str,
    explicit: str | None = None,
    *,
    profiles: Mapping[str, HardwareProfile] | None = None,
    duty: str | None = None,
) -> HardwareProfile:
    """The profile for a device called `device_name` of `kind` ("cpu" or "cuda"); for a
    bench timed under `duty`, the matched profile's variant calibrated under that duty,
    where there is one (`duty_variant`)."""
    if profiles is None:
        profiles = load_profiles()
    if explicit is not None:
        return device_profile(explicit, kind, profiles)
    return duty_variant(_matched(device_name, kind, profiles), duty, profiles)


def _matched(
    device_name: str, kind: str, profiles: Mapping[str, HardwareProfile]
) -> HardwareProfile:
    known = ", ".join(sorted(profiles)) or "(none)"
    lowered = device_name.lower()
    best: tuple[int, HardwareProfile] | None = None
    for profile in profiles.values():
        if profile.kind != kind:
            continue
        for pattern in profile.match:
            if pattern and pattern.lower() in lowered and (best is None or len(pattern) > best[0]):
                best = (len(pattern), profile)
    if best is not None:
        return best[1]
    if kind == "cpu" and GENERIC_CPU in profiles:
        return profiles[GENERIC_CPU]
    raise UserError(
        f"no hardware profile matches {kind} device {device_name!r}; known: {known} "
        "(pass --hardware NAME, or run kernbench calibrate)"
    )


def duty_variant_name(name: str, duty: str) -> str:
    """What `kernbench calibrate --duty DUTY` names a device's profile calibrated under a
    duty other than the default: `h200` -> `h200-isolated`."""
    return f"{name}-{duty}"


def duty_variant(
    profile: HardwareProfile, duty: str | None, profiles: Mapping[str, HardwareProfile]
) -> HardwareProfile:
    """`profile`'s variant whose ceilings were calibrated under `duty` (so a bench's
    utilization is read against ceilings measured the way its samples are), if one
    exists; else `profile` itself. Such a variant matches no device of its own."""
    if duty is None or calibrated_duty(profile) == duty:
        return profile
    variant = profiles.get(duty_variant_name(profile.name, duty))
    if variant is None or variant.kind != profile.kind or calibrated_duty(variant) != duty:
        return profile
    return variant


def calibrated_duty(profile: HardwareProfile) -> str | None:
    """The timer duty `profile`'s measured GPU ceilings were sampled under: its
    calibration's `duty`, else `sustained` (calibrate's one duty before it recorded it);
    None for a CPU profile or one of datasheet figures alone."""
    ceilings = [*profile.peak_tflops.values(), profile.memory_gbs]
    if profile.kind != "cuda" or all(c.measured is None for c in ceilings):
        return None
    return str(profile.calibration.get("duty", "sustained"))


def ceiling_source(profile: HardwareProfile, ceiling: Ceiling) -> str:
    """Where a ceiling the figures draw comes from: `datasheet`, `measured`, or `nominal`:
    a placeholder's guess, given as measured so that it never marks a result invalid
    (cpu-generic; its calibration's source says so)."""
    if ceiling.measured is None:
        return "datasheet"
    return "nominal" if is_nominal(profile) else "measured"


def is_nominal(profile: HardwareProfile) -> bool:
    """A placeholder's guessed rates (cpu-generic), not any machine's."""
    return str(profile.calibration.get("source", "")).startswith("nominal")


def named_profile(
    name: str, profiles: Mapping[str, HardwareProfile] | None = None
) -> HardwareProfile:
    """The profile called `name`; an unknown name is a one-line error listing the known."""
    if profiles is None:
        profiles = load_profiles()
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "(none)"
        raise UserError(f"unknown hardware profile {name!r}; known: {known}")
    return profiles[name]


def device_profile(
    name: str, kind: str, profiles: Mapping[str, HardwareProfile] | None = None
) -> HardwareProfile:
    """The profile called `name`, for a device of `kind`: a GPU's ceilings would make a
    CPU run's utilization meaningless, and the other way round."""
    profile = named_profile(name, profiles)
    if profile.kind != kind:
        raise UserError(f"hardware profile {name!r} is for {profile.kind} devices; "
                        f"this run is on {kind}")
    return profile


def detect_device() -> str:
    """ "cuda" when torch is installed and sees a GPU, else "cpu"."""
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(choice: str) -> str:
    """`cpu`, `cuda`, or `auto` (detected) -> the device to plan and run on."""
    if choice == "auto":
        return detect_device()
    if choice not in DEVICES:
        raise UserError(f"unknown device {choice!r}; choose cpu, cuda or auto")
    return choice
