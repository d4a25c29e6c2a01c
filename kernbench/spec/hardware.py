"""Hardware profiles (`configs/hardware/*.yaml`): loading, and picking one for a device.

A profile is chosen by `--hardware NAME` (or a bench's `hardware:`) when given, else by
the longest `match` substring found in the device's name, so a more specific profile
(say "H200 NVL") wins over a general one ("H200"). A CPU with no profile of its own
gets `cpu-generic`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from kernbench.errors import SpecError, UserError
from kernbench.spec.discovery import project_root
from kernbench.spec.loader import load_hardware, shown_path
from kernbench.spec.models import HardwareProfile

GENERIC_CPU = "cpu-generic"
DEVICES = ("cpu", "cuda")


def hardware_dir(root: Path | None = None) -> Path:
    return (root if root is not None else project_root()) / "configs" / "hardware"


def profile_files(root: Path | None = None) -> list[Path]:
    folder = hardware_dir(root)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def load_profiles(root: Path | None = None) -> dict[str, HardwareProfile]:
    """Every profile under `root`/configs/hardware, by name."""
    profiles: dict[str, HardwareProfile] = {}
    files: dict[str, Path] = {}
    for path in profile_files(root):
        profile = load_hardware(path)
        if profile.name in profiles:
            message = (
                f"profile {profile.name!r} is also defined in {shown_path(files[profile.name])}"
            )
            raise SpecError(shown_path(path), None, "name", message)
        profiles[profile.name] = profile
        files[profile.name] = path
    return profiles


def select_profile(
    device_name: str,
    kind: str,
    explicit: str | None = None,
    *,
    profiles: Mapping[str, HardwareProfile] | None = None,
) -> HardwareProfile:
    """The profile for a device called `device_name` of `kind` ("cpu" or "cuda")."""
    if profiles is None:
        profiles = load_profiles()
    known = ", ".join(sorted(profiles)) or "(none)"
    if explicit is not None:
        if explicit not in profiles:
            raise UserError(f"unknown hardware profile {explicit!r}; known: {known}")
        return profiles[explicit]
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
