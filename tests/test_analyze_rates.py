"""One division for every stored rate, and one mapping of a time's interval to a rate's."""

from __future__ import annotations

import pytest

from kernbench.analyze.collective import bandwidths
from kernbench.analyze.rates import per_second, rate_bounds


def test_a_rate_is_its_count_over_the_time_in_the_unit_asked():
    assert per_second(3e9, 2.0, 1e9) == 1.5
    assert per_second(10.0, 4.0) == 2.5
    # algbw is the same division as a cell's GB/s: a collective's two columns agree exactly
    assert bandwidths("allreduce", 3e9, 2, 2.0)["algbw_gbs"] == per_second(3e9, 2.0, 1e9)


def test_a_rates_interval_is_its_times_interval_inverted():
    # 100 GB/s at a median of 2 µs, the time's CI [1, 4] µs: [50, 200] GB/s.
    assert rate_bounds(100.0, 2e-6, 1e-6, 4e-6) == pytest.approx((50.0, 200.0))
    assert rate_bounds(100.0, 2e-6, 0.0, 4e-6) is None  # no rate bounds it above
    assert rate_bounds(100.0, 2e-6, -1e-6, 4e-6) is None
