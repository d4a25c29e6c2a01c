"""What a packager gets: the sdist builds a wheel that holds every file of the package,
with no deprecated setting on the way; the tests stay in the repository (MANIFEST.in).

Built offline, as tests/test_wheel_install.py builds (setuptools' backend called without
build isolation), in a copy, so the checkout is left untouched; about two seconds.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("setuptools") is None,
                                reason="building offline needs setuptools installed")

REPO = Path(__file__).resolve().parent.parent
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")


def build(kind: str, source: Path, out: Path) -> Path:
    """`kind` ("sdist" or "wheel") of the project in `source`; any warning fails the build
    (`-W error`: a setting setuptools deprecates is found before it stops building)."""
    out.mkdir(exist_ok=True)
    call = f"from setuptools import build_meta; print(build_meta.build_{kind}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-W", "error", "-c", call], cwd=source,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str], str]:
    """The sdist's file names (below its top folder), then those of the wheel built from
    the unpacked sdist, and the wheel's METADATA."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy2(REPO / name, source / name)
    for folder in ("kernbench", "tests"):
        shutil.copytree(REPO / folder, source / folder, ignore=SKIPPED)
    sdist = build("sdist", source, work / "dist")
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
        sdist_names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    (unpacked,) = (work / "unpacked").iterdir()
    wheel = build("wheel", unpacked, work / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return sdist_names, archive.namelist(), archive.read(metadata).decode()


def package_files() -> set[str]:
    return {path.relative_to(REPO).as_posix() for path in (REPO / "kernbench").rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def test_the_wheel_from_the_sdist_holds_every_file_of_the_package(built: tuple) -> None:
    _, wheel_names, _ = built
    assert {name for name in wheel_names if name.startswith("kernbench/")} == package_files()


def test_the_sdist_leaves_out_the_tests_whose_data_stays_in_the_repository(built: tuple) -> None:
    sdist_names, _, _ = built
    assert not [name for name in sdist_names if name.startswith("tests")]
    assert package_files() <= set(sdist_names)


def test_the_metadata_names_the_license_as_an_spdx_expression(built: tuple) -> None:
    _, _, metadata = built
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "Requires-Python: >=3.10" in metadata.splitlines()
