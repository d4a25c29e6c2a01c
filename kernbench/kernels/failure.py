"""A failed cell's reason: the exception in one line, and where in the code it was raised.

The full traceback stays in the round's `extra.traceback` (results.json); the reason,
which the console, the log and the report show, names the frame to open first.
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

REASON_CHARS = 500
# Frames in these folders are Python's or an installed library's: the user's code that
# called into them is the place to look, not torch's internals.
_LIBRARY_FOLDERS = tuple(
    str(Path(folder).resolve())
    for folder in {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib",
                                                             "platlib")}
)


def one_line(exc: BaseException, where: str | None = None) -> str:
    """`Type: message` on one line (`out of memory: ...` for an OOM), then `(where)`."""
    # A SyntaxError's str() ends with "(file.py, line 12)", which `where` says as the place
    message = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    text = " ".join(message.split()) or type(exc).__name__
    name = type(exc).__name__
    if isinstance(exc, MemoryError) or "OutOfMemory" in name:
        head = f"out of memory: {text}"[:REASON_CHARS]
    else:
        head = f"{name}: {text}"[:REASON_CHARS]
    return f"{head} ({where})" if where else head


def raised_at(exc: BaseException) -> str | None:
    """`file.py:LINE, in FUNCTION` of the innermost frame of the traceback outside Python's
    and the installed libraries' folders (the innermost of all where every frame is in
    them); None without a traceback. A broken contract names the callable at fault."""
    blamed = getattr(exc, "defined_at", None)
    if isinstance(blamed, str):
        return blamed
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{Path(exc.filename).name}:{exc.lineno}"  # the file that does not parse
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    own = [frame for frame in frames if not _in_library(frame.filename)]
    frame = (own or frames)[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}, in {frame.name}"


def _in_library(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return True
    return str(Path(filename).resolve()).startswith(_LIBRARY_FOLDERS)
