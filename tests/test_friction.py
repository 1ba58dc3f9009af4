"""The friction cone rows (``wbsim.controllers.friction``) against the cone's own definition:
``|f_x|, |f_y| <= (mu / sqrt(2)) f_n``, ``f_n >= f_min`` in the contact frame, inside Coulomb's
``|f_t| <= mu f_n``."""

import numpy as np
import pinocchio as pin
import pytest
from wbsim.controllers.friction import CONE_ROWS, cone_rows, stacked_cone_rows

from wbsim.errors import UnknownNameError, WbsimError


def _inside(f_local, mu, f_min):
    """The inscribed pyramid, written from its definition in the contact frame."""
    m = mu / np.sqrt(2.0)
    fx, fy, fn = f_local
    return fn >= f_min and abs(fx) <= m * fn and abs(fy) <= m * fn


def test_rows_are_the_inscribed_pyramid_in_the_contact_frame():
    rng = np.random.default_rng(0)
    mu, f_min = 0.7, 5.0
    R = pin.rpy.rpyToMatrix(0.3, -0.2, 1.1)                 # a tilted, yawed contact frame
    C, d = cone_rows(mu, R, f_min)
    C0, d0 = cone_rows(mu, None, f_min)
    assert C.shape == (5, 3) and d.shape == (5,) and len(CONE_ROWS) == 5
    n_in = 0
    for _ in range(2000):
        f_local = rng.normal(size=3) * [30.0, 30.0, 40.0] + [0.0, 0.0, 20.0]
        inside = _inside(f_local, mu, f_min)
        n_in += inside
        assert bool(np.all(C @ (R @ f_local) <= d + 1e-12)) == inside
        assert bool(np.all(C0 @ f_local <= d0 + 1e-12)) == inside
        if inside:                                          # inside Coulomb's cone too
            assert np.hypot(f_local[0], f_local[1]) <= mu * f_local[2] + 1e-12
    assert 200 < n_in < 1800
    # the pyramid's edges touch the cone: (m, m, 1) lies on two faces and on the cone
    m = mu / np.sqrt(2.0)
    assert np.allclose(np.hypot(m, m), mu) and np.allclose((C0 @ [m, m, 1.0])[[1, 3]], 0.0)
    assert d[0] == -f_min and not np.signbit(cone_rows(mu)[1][0])   # +0.0 for f_min = 0


def test_wrench_rows_ignore_the_moment_and_stack_block_diagonally():
    R = np.stack([pin.rpy.rpyToMatrix(0.0, 0.0, 0.5), pin.rpy.rpyToMatrix(0.1, 0.2, -0.4)])
    C6, _ = cone_rows(0.5, R[0], dim=6)
    assert np.array_equal(C6[:, :3], cone_rows(0.5, R[0])[0]) and not C6[:, 3:].any()
    C, d = stacked_cone_rows(2, 0.5, R, 1.0, dim=6)
    assert C.shape == (10, 12) and d.shape == (10,)
    assert np.array_equal(C[5:, 6:], cone_rows(0.5, R[1], 1.0, dim=6)[0])
    assert not C[:5, 6:].any() and not C[5:, :6].any()


def test_bad_arguments_raise():
    with pytest.raises(UnknownNameError):
        cone_rows(0.7, cone="elliptic")
    with pytest.raises(WbsimError):
        cone_rows(0.0)
    with pytest.raises(WbsimError):
        cone_rows(0.7, min_normal_force=-1.0)
