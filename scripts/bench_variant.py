"""A copy of a bench with some of its keys set: the variant a GPU script runs beside it.

    python3 scripts/bench_variant.py benches/milestone-1h-ccl.yaml OUT.yaml \\
        'timer: {l2: warm}' 'requires: {world_size: 1}' --drop data

Each SETTING is a YAML mapping merged one level deep: a mapping updates the bench's
mapping under the same key (a key the bench sets too is replaced), anything else replaces
the key. `--drop KEY` removes a key (`data`: a variant has no committed data of its own).
Prints the variant's timer, one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml


def variant(doc: dict[str, Any], settings: list[str], drop: list[str]) -> dict[str, Any]:
    for setting in settings:
        for key, value in yaml.safe_load(setting).items():
            if isinstance(value, dict) and isinstance(doc.get(key), dict):
                doc[key].update(value)
            else:
                doc[key] = value
    for key in drop:
        doc.pop(key, None)
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("settings", nargs="*", metavar="SETTING")
    parser.add_argument("--drop", action="append", default=[], metavar="KEY")
    args = parser.parse_args()
    doc = variant(yaml.safe_load(args.bench.read_text()), args.settings, args.drop)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(yaml.safe_dump(doc, sort_keys=False))
    print("timer:", yaml.safe_dump(doc.get("timer", {}), default_flow_style=True,
                                   width=1000).strip())


if __name__ == "__main__":
    main()
