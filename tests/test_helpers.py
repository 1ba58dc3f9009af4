"""Small shared helpers: the lock-free cached property and the non-finite check."""

import numpy as np

from wbsim._cached import cached_property
from wbsim.errors import nonfinite_joints


class _Counted:
    calls = 0

    @cached_property
    def value(self) -> list[int]:
        """A fresh list, counted."""
        _Counted.calls += 1
        return [1, 2]


def test_a_cached_property_computes_once_per_instance():
    _Counted.calls = 0
    a, b = _Counted(), _Counted()
    assert a.value is a.value
    assert b.value is not a.value
    assert _Counted.calls == 2
    assert _Counted.value.__doc__ == "A fresh list, counted."


def test_nonfinite_joints_names_the_bad_joints_and_lets_huge_finite_values_pass():
    names = ("a", "b", "c")
    assert nonfinite_joints(np.array([0.0, 1.0, -2.0]), names) is None
    # the sum overflows to inf, the values are finite: the close look says so
    with np.errstate(over="ignore"):
        assert nonfinite_joints(np.array([1e308, 1e308, 0.0]), names) is None
    assert nonfinite_joints(np.array([0.0, np.nan, np.inf]), names) == ["b", "c"]
    assert nonfinite_joints(np.array([-np.inf, 0.0, 0.0]), names) == ["a"]
    assert nonfinite_joints([0.0, float("nan"), 0.0], names) == ["b"]  # a list too
