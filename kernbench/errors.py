"""The one user-facing error class and the process exit codes.

Every mistake a user can make (a bad bench file, an unknown name, a missing data file)
is raised as a `UserError` and turned into one line on stderr by the CLI, never a
traceback. The exit codes are distinct so scripts can tell the cases apart.
"""

from __future__ import annotations

import errno
import math
import os
import re

EXIT_OK = 0
EXIT_FAILED = 1  # the run finished, but some cell (or A/B variant) failed
EXIT_USAGE = 2  # bad input: bench file, option, unknown name
EXIT_INTERRUPTED = 130  # Ctrl-C; the journal keeps what was measured
# The reader of the output went away (`kernbench list | head -1`): 128 + SIGPIPE, what a
# shell reports of any tool a closed pipe ends, so `set -o pipefail` sees the usual code
# and no script takes it for "cells failed" (1) or for a finished command (0).
EXIT_BROKEN_PIPE = 141
# How close a name the user wrote must be to a known one to be offered as what was meant
# (difflib's ratio): `timr` for timer, `budget` for budget_s, `topq` for topk; `colour`
# gets none.
MEANT_CUTOFF = 0.75
# What would break an error's one line: a path or a name holding one (`a\nb.yaml`) is
# printed with it escaped, as Python writes it in a string.
LINE_BREAKS = {ord(char): repr(char)[1:-1] for char in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
_WHOLE_NUMBER = re.compile(r"[0-9]+")


class UserError(Exception):
    """A mistake in the user's input, reported as one line and exit code `code`."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        message = message.translate(LINE_BREAKS)  # every user error is one line
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message


def is_whole_number(text: str) -> bool:
    """Whether `text` is a whole number written in ASCII digits. `str.isdigit` is not this
    check: it takes '²', which `int()` then refuses with a traceback, and '٣', which
    `int()` reads as 3."""
    return _WHOLE_NUMBER.fullmatch(text) is not None


def number_problem(value: float, low: float | None = None, high: float | None = None,
                   above: bool = False) -> str | None:
    """Why `value` is no finite number within [low, high] (either end open where None;
    `above`: `low` itself excluded), None where it is one: the words of every float
    option, and of the settings an API caller gives in their place."""
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    below_low = low is not None and (value <= low if above else value < low)
    if below_low or (high is not None and value > high):
        return f"{value:g} is not within {_range(low, high, above)}"
    return None


def _range(low: float | None, high: float | None, above: bool) -> str:
    start = None if low is None else f"{low:g} (excluded)" if above else f"{low:g}"
    if high is None:
        return f"{start} and above"
    return f"{start} to {high:g}" if start is not None else f"{high:g} and below"


def seconds_from_env(name: str, default: float) -> float:
    """The seconds the environment variable `name` holds, `default` when unset or empty;
    a value that is not a positive, finite number is a one-line `UserError` naming both."""
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{name}: {raw!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise UserError(f"{name}: {raw!r} is not a positive number of seconds")
    return value


def name_too_long(exc: OSError) -> UserError | None:
    """A path the file system refuses as too long (a name over its limit, 255 bytes on most,
    or the whole path over the system's) as the user's one-line error, `PATH: File name too
    long`; None for any other OSError. Whichever command met it first: `Path.exists` and
    `Path.is_dir` raise it (they hide only a missing file), so every path given on the
    command line can."""
    if exc.errno != errno.ENAMETOOLONG:
        return None
    path = os.fsdecode(exc.filename) if exc.filename is not None else None
    return UserError(f"{path}: {exc.strerror}" if path else str(exc))


def invalid_file(path: object, exc: Exception, within: str = "") -> UserError:
    """A pydantic ValidationError of a file kernbench wrote (results, manifests) as one
    line: `PATH: field.path: message`, the path under the field `within` when the model
    checked a part of the file. Bench files get line numbers from the loader."""
    first = exc.errors()[0]  # type: ignore[attr-defined]
    field = ".".join(str(part) for part in ((within,) if within else ()) + first["loc"])
    message = first["msg"].removeprefix("Value error, ")  # a model validator's own words
    return UserError(f"{path}: {field}: {message}" if field else f"{path}: {message}")


class SpecError(UserError):
    """A bench or hardware file that does not validate: `PATH:LINE: field.path: message`."""

    def __init__(self, path: str, line: int | None, field: str, message: str) -> None:
        where = f"{path}:{line}" if line else path
        shown = field if field.isprintable() else repr(field)  # a key of "\n" stays one line
        text = f"{where}: {shown}: {message}" if field else f"{where}: {message}"
        super().__init__(text, EXIT_USAGE)
        self.path = path
        self.line = line
        self.field = field
        self.detail = message


class NeedsExtra(SpecError):
    """A bench file that cannot be checked here because it names something that needs one
    of kernbench's optional dependencies: `validate` of every bench skips it."""
