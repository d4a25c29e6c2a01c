"""Before an A/B: is the switch read by the code under test at all?

If it is not, both sides run the same code and the A/B reports "no difference", a
false result that looks like a real one. The check is textual: the switch's name must
appear in the kernel factory's module file, or be the value of one of the bench's variant
options (a kernel that reads the variable an option names, as the built-in `sleep` reads
its `switch:`). Code that reads it indirectly (a library below the kernel, a name built at
run time) is not seen, so a miss is a warning only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Variables read by the libraries under a kernel, not by its source: a textual check can
# neither confirm nor refute them, so they get a note instead of a warning.
LIBRARY_PREFIXES = {
    "NCCL_": "NCCL",
    "NVIDIA_": "the CUDA libraries",
    "CUBLAS": "cuBLAS",
    "CUDA_": "the CUDA runtime",
    "TORCH_": "PyTorch",
    "PYTORCH_": "PyTorch",
    "TRITON_": "Triton",
    "GLOO_": "gloo",
    "OMP_": "OpenMP",
    "MKL_": "MKL",
    "OPENBLAS_": "OpenBLAS",
}


def switch_warning(
    switch: str, kernel: str, source: Path | None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
) -> str | None:
    """A one-line warning, or None when the switch's name is in the kernel's source or is
    the value of an option of one of `variants` (the bench's)."""
    if any(value == switch for options in (variants or {}).values()
           for value in options.values()):
        return None
    if source is None:
        return (
            f"note: cannot check that {switch} is read: the source of kernel {kernel!r} "
            "was not found"
        )
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"note: cannot check that {switch} is read: {source}: {exc.strerror}"
    if switch in text:
        return None
    library = next((name for prefix, name in LIBRARY_PREFIXES.items()
                    if switch.startswith(prefix)), None)
    if library is not None:
        return (
            f"note: {switch} is read by {library}, below kernel {kernel!r}'s source, where "
            "this check cannot look; check its spelling, and let --aa show the noise floor"
        )
    return (
        f"warning: {switch} appears nowhere in {source} (kernel {kernel!r}); if nothing "
        "reads it, both sides run the same code, and any verdict but 'same' is noise"
    )
