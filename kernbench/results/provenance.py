"""Where and how a result was measured: host, CPU, GPU, libraries, commit, command."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from kernbench.errors import UserError
from kernbench.results.jsonio import read_json, write_json
from kernbench.spec.discovery import project_root, source_tree
from kernbench.timing.nvml import driver_version
from kernbench.worker_env import SWITCH_ENV

# Environment variables that can change what a kernel does; recorded with every result.
ENV_PREFIXES = (
    "KERNBENCH_", "NVIDIA_", "CUDA_", "NCCL_", "TORCH_", "TRITON_",
    "OMP_", "MKL_", "OPENBLAS_", "CUBLAS", "PYTORCH_",
)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def blas_info() -> list[dict[str, Any]]:
    """The BLAS libraries numpy loaded, as threadpoolctl sees them at run time."""
    import numpy  # noqa: F401 - threadpoolctl reports only libraries already loaded
    from threadpoolctl import threadpool_info

    keys = ("internal_api", "version", "num_threads", "threading_layer", "architecture")
    return [{k: info.get(k) for k in keys} for info in threadpool_info()]


def kernbench_version() -> str | None:
    """The running kernbench's version: from its source tree's pyproject.toml when it runs
    from a checkout (an editable install's metadata is only as new as the install), else
    the installed distribution's."""
    tree = source_tree()
    if tree is not None:
        version = pyproject_version(tree / "pyproject.toml")
        if version is not None:
            return version
    return package_version("kernbench")


def pyproject_version(path: Path) -> str | None:
    """`version` of the `[project]` table (a plain line scan: tomllib is 3.11+)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    table = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            table = stripped
            continue
        found = _VERSION_LINE.match(stripped)
        if table == "[project]" and found:
            return found.group(1)
    return None


_VERSION_LINE = re.compile(r"""^version\s*=\s*["']([^"']+)["']""")


def recorded_git(provenance: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `{"commit", "dirty"}` a run's provenance recorded (`provenance.git_state`); {}
    where it recorded none, or something else."""
    git = provenance.get("git")
    return git if isinstance(git, dict) else {}


def code_label(prov: Mapping[str, Any]) -> str:
    """The code that measured: `kernbench VERSION @ COMMIT`, with the tree's state."""
    version = prov.get("kernbench") or "(version unknown)"
    git = recorded_git(prov)
    commit = git.get("commit")
    if not (isinstance(commit, str) and _COMMIT.fullmatch(commit)):
        return f"kernbench {version}, no git commit"  # a wheel, or a tree without .git
    state = {True: " (dirty)", False: "", None: " (tree state not recorded)"}
    return f"kernbench {version} @ {commit[:10]}{state.get(git.get('dirty'), '')}"


# A commit id; files written before git's exit code was honoured hold its "HEAD" instead.
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@lru_cache(maxsize=1)
def git_commit() -> dict[str, Any]:
    """The commit of the checkout kernbench runs from, and whether tracked files differ from
    it; {} when there is none (an installed wheel, a tree copied without its .git)."""
    tree = source_tree()
    return git_state(tree) if tree is not None else {}


def git_state(folder: Path) -> dict[str, Any]:
    """`{"commit", "dirty"}` of the repository whose top level is `folder`, or {}.

    A failing git is no commit, never its output: `git rev-parse HEAD` prints "HEAD" where
    there is no commit. A folder inside another repository is not that repository's."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != folder.resolve():
        return {}
    commit = _git(folder, "rev-parse", "--verify", "HEAD^{commit}")
    if commit is None:
        return {}
    status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _git(folder: Path, *args: str) -> str | None:
    """git's stdout, stripped, when it exits 0; None when it fails or is not installed."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=folder, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def switch_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    switch = os.environ.get(SWITCH_ENV)
    if switch and switch in os.environ:
        env[switch] = os.environ[switch]
    return dict(sorted(env.items()))


def gpu_info() -> dict[str, Any]:
    """Only called for CUDA runs: imports torch. On a machine without CUDA (results
    rebuilt away from the GPU that measured them) the GPU is None."""
    import torch

    if not torch.cuda.is_available():
        return {"gpu": None, "cuda": torch.version.cuda}
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    info: dict[str, Any] = {
        "gpu": props.name,
        "gpu_uuid": gpu_uuid(props),
        "gpu_count": torch.cuda.device_count(),
        "gpu_memory_bytes": props.total_memory,
        "gpu_sm_count": props.multi_processor_count,
        "gpu_l2_bytes": getattr(props, "L2_cache_size", None),
        "cuda": torch.version.cuda,
        "capability": f"{props.major}.{props.minor}",
    }
    driver = driver_version()  # None without pynvml or a driver: left out, not an error
    if driver is not None:
        info["driver"] = driver
    return info


def gpu_uuid(props: Any) -> str | None:
    """The GPU's UUID as nvidia-smi and CUDA_VISIBLE_DEVICES write it (`GPU-…`): two cards of
    one model differ only by it. torch's own `uuid` prints without the prefix."""
    uuid = getattr(props, "uuid", None)
    return None if uuid is None else f"GPU-{uuid}"


def collect(device: str) -> dict[str, Any]:
    info = collect_host(device)
    if device == "cuda":
        info.update(gpu_info())
        info["device_name"] = info["gpu"]
    return info


def collect_host(device: str) -> dict[str, Any]:
    """`collect` but the GPU's facts: what is known without torch and a CUDA context (the
    device is named as the CPU)."""
    return {
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": package_version("numpy"),
        "blas": blas_info(),
        "torch": package_version("torch"),
        "triton": package_version("triton"),
        "kernbench": kernbench_version(),
        "git": git_commit(),
        "command": portable_command(sys.argv),
        "environment": switch_environment(),
        "device": device,
        "device_name": cpu_model(),
    }


# A run's provenance, written into its folder as it starts: a run whose parent dies (a
# kill, a time limit) is collected elsewhere with the measuring machine's provenance.
SAVED_NAME = "provenance.json"


def save(folder: Path, info: dict[str, Any]) -> None:
    write_json(Path(folder) / SAVED_NAME, info)


def save_start(folder: Path, device: str) -> dict[str, Any]:
    """This command's provenance, saved in the run folder as the run starts (or goes on:
    a resume keeps the command that started the run, and is listed after it)."""
    started = collect(device)
    earlier = saved(folder)
    if earlier and "command" in earlier:
        resumes = [*earlier.get("resumed_by", []), started["command"]]
        started.update(command=earlier["command"], resumed_by=resumes)
    save(folder, started)
    return started


def saved(folder: Path) -> dict[str, Any] | None:
    """The provenance `save` wrote into a run folder, if it reads as a JSON object."""
    path = Path(folder) / SAVED_NAME
    if not path.is_file():
        return None
    try:
        info = read_json(path, "provenance")
    except UserError:
        return None
    return info if isinstance(info, dict) else None


def utc_now(now: datetime | None = None) -> str:
    """A UTC time (`now`, default this moment's) as every recorded time is written:
    2026-12-04T15:52:31Z."""
    return (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_stamp() -> str:
    """The time as a folder name: runs/NAME/<stamp>/."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def device_model(device: str) -> str:
    """What pins and hardware profiles key on: the GPU's name, or the CPU's."""
    if device == "cuda":
        gpu = gpu_info()["gpu"]
        if gpu is None:
            raise UserError("no CUDA device on this machine to match a hardware profile to")
        return str(gpu)
    return cpu_model()


def portable_path(path: str | Path) -> str:
    """`path` relative to the project when it lies inside it: results are committed and
    shared, and the folder a checkout sits in says nothing about the measurement."""
    try:
        return str(Path(path).resolve().relative_to(project_root().resolve()))
    except (ValueError, OSError):
        return str(path)


def portable_command(argv: list[str]) -> list[str]:
    """The command line as run, the program by its name and project paths relative."""
    if not argv:
        return []
    program = Path(argv[0])
    name = "kernbench" if program.name == "__main__.py" else program.name
    return [name] + [portable_path(arg) if arg.startswith("/") else arg for arg in argv[1:]]
