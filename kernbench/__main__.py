"""`python -m kernbench`: the same as the `kernbench` command."""

from __future__ import annotations

from kernbench.cli import main

if __name__ == "__main__":
    main()
