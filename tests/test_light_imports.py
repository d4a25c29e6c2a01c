"""The light commands load no heavy library: `--help`, `list` and `validate` of a bench
that names no op answer in well under a second, and on a machine without scipy,
matplotlib or torch (docs/architecture.md: imports)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("scipy", "matplotlib", "torch", "triton")
# Each command line in turn, in one process; after each, the heavy modules loaded so far.
# An op bench's `validate` imports its op to check it (spec/op_checks.py), so the benches
# validated here name a kernel, not an op.
LIGHT_COMMANDS = [
    ["--help"],
    ["run", "--help"],
    ["ab", "--help"],
    ["list"],
    ["list", "--json"],
    ["validate", "benches/milestone-1h-gemm.yaml", "benches/milestone-1h-ccl.yaml",
     "benches/ab-synthetic.yaml"],
]
PROBE = f"""
import contextlib, io, json, sys
from kernbench import cli
loaded = {{}}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.app(argv, prog_name="kernbench")
        except SystemExit as exc:
            assert not exc.code, (argv, exc.code)
    loaded[" ".join(argv)] = sorted(m for m in {HEAVY!r} if m in sys.modules)
print(json.dumps(loaded))
"""


def test_light_commands_import_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(LIGHT_COMMANDS)],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert loaded == {" ".join(argv): [] for argv in LIGHT_COMMANDS}
