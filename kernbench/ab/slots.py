"""The start-slot effect of an interleaved A/B, and each round's deltas without it.

In an interleaved round every side is a process of its own, started in an order that
rotates from round to round (`schedule.start_order`). On H200s the process started second
ran a 29 µs batched GEMM 1-2% faster than the other two, round after round, in two A/Bs on
two machines (docs/ab-schedules.md); at 0.3 ms and more the slots read alike. Pairing
turns cannot cancel such an offset, which is the same in every turn of the process, so
each round's delta carried the difference of its two sides' slots and the rounds spread
by ±2%. It comes with the order in which the processes create their CUDA contexts, not
with the order in which they allocate (scripts/slot_probe.py).

The rotation puts every side in every slot equally often, which makes the slots' effect
estimable (a Latin-square design). Per cell, each round's delta log(side/A) is modelled as

    d[round, side] = effect[side] + slot[p(round, side)] - slot[p(round, A)] + noise

with A' (AA1) a copy of A (effect 0) and the first slot's effect 0, fitted by least
squares over every round and side. The deltas the interval, the A/A floor and the verdict
then use are d without the fitted slot terms, their scatter around their median scaled by
sqrt(n / (n - k)) (n deltas, k fitted parameters): the fit absorbs k of the deltas'
degrees of freedom, and the plain residuals would understate the noise. Where the rounds
cannot separate the slots from the effects (too few rounds, a side always in one slot),
the deltas stay as measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kernbench.ab.interleave import REFERENCE
from kernbench.ab.schedule import SideRun, aa_sides, start_order

# Fewest degrees of freedom left after the fit: with fewer, the slot terms would take up
# most of what the rounds say about the noise.
MIN_DF = 3


@dataclass(frozen=True)
class SlotFit:
    deltas: dict[str, list[float]]  # per side, per round: log(side/A) without slot terms
    effects: list[float] | None  # per start slot: log(time / first slot's); None: not fitted


def start_slots(runs: Sequence[SideRun]) -> list[dict[str, int]]:
    """Per round, in round order, each side's place in its round's start order (0: started
    first)."""
    rounds = sorted({run.round for run in runs})
    return [{run.side: slot for slot, run in enumerate(start_order(
        [run for run in runs if run.round == k]))} for k in rounds]


def without_slots(
    deltas: Mapping[str, Sequence[float]], slots: Sequence[Mapping[str, int]]
) -> SlotFit:
    """Each side's per-round deltas log(side/A) with the start slots' effect taken out.

    `deltas`: per side other than A, one delta per round; A' (the interleaved schedule's
    A/A side) is a copy of A. `slots`: per round, every side's start slot, A's included."""
    measured = SlotFit({side: list(values) for side, values in deltas.items()}, None)
    sides = list(deltas)
    values = [v for side in sides for v in deltas[side]]
    if not sides or not all(len(deltas[s]) == len(slots) for s in sides):
        return measured
    if not all(map(math.isfinite, values)):
        return measured
    copy_of_a = aa_sides("interleaved")[1]
    with_effect = [side for side in sides if side != copy_of_a]
    n_slots = 1 + max(max(slot.values()) for slot in slots)
    k = len(with_effect) + n_slots - 1
    rows = []
    for side in sides:
        for slot in slots:
            row = np.zeros(k)
            if side in with_effect:
                row[with_effect.index(side)] = 1.0
            for who, sign in ((side, 1.0), (REFERENCE, -1.0)):
                if slot[who] > 0:
                    row[len(with_effect) + slot[who] - 1] += sign
            rows.append(row)
    design = np.array(rows)
    n = len(values)
    if n - k < MIN_DF or np.linalg.matrix_rank(design) < k:
        return measured
    fitted = np.linalg.lstsq(design, np.array(values), rcond=None)[0]
    # Rounded far below any effect: LAPACK's last bits differ between machines, and
    # `kernbench summarize` should rebuild a committed ab.json exactly anywhere.
    effects = [0.0, *(round(float(e), 12) for e in fitted[len(with_effect):])]
    scale = math.sqrt(n / (n - k))
    adjusted: dict[str, list[float]] = {}
    for side in sides:
        plain = [d - (effects[slot[side]] - effects[slot[REFERENCE]])
                 for d, slot in zip(deltas[side], slots, strict=True)]
        center = float(np.median(plain))
        adjusted[side] = [center + scale * (d - center) for d in plain]
    return SlotFit(adjusted, effects)
