"""Contact complementarity formulations for a point over flat ground (seed eqs. 13-43).

Owns one function per formulation. Each returns the residual(s) ``g`` of constraints written
``g <= 0`` (``g == 0`` for the classical one), so one definition serves CasADi symbols (``SX``,
``MX``, ``DM``: the constraint goes into an NLP) and numpy floats or arrays (the same constraint
checked on a solution). Flat ground: normal ``n = e3``, height ``h(p) = p_z``, normal force
``f_n = f_z``; ``t(p) = [e1 e2]``.

Signs and bodies were lost from the seed text; each is derived from its prose in the function's
docstring and checked in ``tests/test_planning_complementarity.py`` against hand values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wbsim.errors import UnknownNameError, WbsimError

__all__ = [
    "FORMULATIONS",
    "check_params",
    "classical",
    "dcc_baumgarte",
    "dcc_planar_scale",
    "dcc_planar_velocity",
    "dcc_sech",
    "relaxed",
    "relaxed_planar",
    "sech",
    "zeta",
]

#: Names of the normal-direction formulations the planners accept, with their parameter names.
FORMULATIONS: dict[str, tuple[str, ...]] = {
    "relaxed": ("eps",),
    "baumgarte": ("eps", "K_bs"),
    "sech": ("k_h", "K_fz"),
}


def check_params(formulation: str, params: dict[str, Any]) -> None:
    """Raise unless ``params`` are exactly the parameters of ``formulation`` (:data:`FORMULATIONS`),
    each a positive finite number.

    Raises:
        UnknownNameError: an unknown formulation, or a parameter it does not take (listing the known
            ones).
        WbsimError: a parameter missing, or not a positive number.
    """
    if formulation not in FORMULATIONS:
        raise UnknownNameError("formulation", formulation, FORMULATIONS)
    need = FORMULATIONS[formulation]
    for k in params:
        if k not in need:
            raise UnknownNameError("parameter", k, need, context=f"of formulation {formulation!r}")
    missing = [k for k in need if k not in params]
    if missing:
        raise WbsimError(f"formulation {formulation!r} needs parameter(s) {', '.join(missing)}")
    for k, v in params.items():
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
            raise WbsimError(f"{formulation} parameter {k} must be a positive number, got {v!r}")


def _lib(*args: Any):
    """``casadi`` if any argument is a CasADi matrix or symbol, else ``numpy``."""
    for a in args:
        if type(a).__module__.startswith("casadi"):
            import casadi

            return casadi
    return np


def _abs(lib, x):
    return lib.fabs(x) if lib is not np else np.abs(x)


def sech(x):
    """Hyperbolic secant ``1 / cosh(x)``, computed as ``2 e^{-|x|} / (1 + e^{-2|x|})``.

    ``1/cosh`` overflows (``cosh(800) = inf``): its value is then 0 but its derivative
    ``-sinh/cosh^2 = inf/inf`` is NaN, which stops IPOPT. Here no intermediate exceeds 2, and the
    derivative ``-sech(x) tanh(x)`` stays finite (0 at large ``|x|``). At ``x = 0`` CasADi's
    derivative of ``|x|`` is 0, which is the right derivative of the even function ``sech``.

    Args:
        x: float, numpy array or CasADi expression (any shape).

    Returns:
        ``sech(x)``, same type and shape, in ``(0, 1]``.
    """
    lib = _lib(x)
    e = lib.exp(-_abs(lib, x))
    return 2.0 * e / (1.0 + e * e)


def classical(h, f_n):
    """Classical complementarity (seed eq. 13): ``h(p) f_n = 0``, with ``h >= 0``, ``f_n >= 0``.

    Args:
        h: height of the point over the ground, m (float, array or CasADi).
        f_n: normal force on the point, N.

    Returns:
        ``g = h f_n`` (N m), to be constrained ``g == 0``. Its Jacobian ``[f_n, h]`` vanishes at
        ``h = f_n = 0``, which violates LICQ (the reason for the other forms).
    """
    return h * f_n


def relaxed(h, f_n, eps):
    """Relaxed complementarity (seed eq. 14): ``h(p) f_n <= eps``.

    Args:
        h: height, m. f_n: normal force, N. eps: relaxation ``> 0``, N m.

    Returns:
        ``g = h f_n - eps`` (N m), constrained ``g <= 0``.
    """
    return h * f_n - eps


def relaxed_planar(f_n, v_t, eps_p):
    """Relaxed planar complementarity (seed eq. 15): ``-eps_p <= f_n v_t <= eps_p`` component-wise.

    Derived from the prose: a loaded point must not slide, so the product of the planar velocity
    ``v_t = t(p)^T pdot`` (m/s, 2 components) with the force pressing the point on the ground is
    zero, relaxed by ``eps_p >= 0`` in each direction. The seed's wording ("tangential forces") is
    read as the force of the contact: with the tangential component a loaded point could slide
    whenever that component is zero, which is the motion the condition exists to stop (as in the
    no-slip condition of seed ref. [47]).

    Args:
        f_n: normal force, N (scalar). v_t: ``(2,)`` planar velocity, m/s. eps_p: ``(2,)`` or
            scalar, N m/s.

    Returns:
        ``(4,)`` residuals ``[f_n v_t - eps_p, -f_n v_t - eps_p]``, constrained ``<= 0``.
    """
    lib = _lib(f_n, v_t, eps_p)
    prod = f_n * v_t
    if lib is np:
        prod = np.asarray(prod, dtype=float).reshape(-1)
        eps = np.broadcast_to(np.asarray(eps_p, dtype=float), prod.shape)
        return np.concatenate([prod - eps, -prod - eps])
    return lib.vertcat(prod - eps_p, -prod - eps_p)


def zeta(h, f_n, h_dot, f_n_dot):
    """``zeta = d(h f_n)/dt = hdot f_n + h fdot_n`` (seed eqs. 19-22, flat ground:
    ``hdot = pdot_z``, ``n`` constant so ``d(n^T f)/dt = fdot_z``).

    Args:
        h: m. f_n: N. h_dot: normal velocity of the point, m/s. f_n_dot: normal force rate, N/s.

    Returns:
        ``zeta``, N m/s.
    """
    return h_dot * f_n + h * f_n_dot


def dcc_baumgarte(h, f_n, h_dot, f_n_dot, K_bs, eps):
    """DCC normal, Baumgarte form (seed eqs. 16-25): ``zeta <= -K_bs h f_n + eps``.

    Derivation: enforcing ``d(h f_n)/dt = -K_bs h f_n`` (16) makes the product decay as
    ``e^{-K_bs t}`` to the classical condition. As ``h f_n >= 0`` (both factors are), the
    inequality ``zeta <= -K_bs h f_n`` (24) still gives a decay at least that fast, and ``eps > 0``
    (25) enlarges the feasible set; at steady state ``h f_n <= eps / K_bs``.

    Args:
        h: m. f_n: N. h_dot: m/s. f_n_dot: N/s. K_bs: gain, 1/s (> 0). eps: N m/s (> 0).

    Returns:
        ``g = zeta + K_bs h f_n - eps`` (N m/s), constrained ``g <= 0``.
    """
    return zeta(h, f_n, h_dot, f_n_dot) + K_bs * h * f_n - eps


def dcc_sech(h, f_n, f_n_dot, k_h, K_fz, M_f):
    """DCC normal, force-derivative form (seed eqs. 26-34):
    ``-M_f <= fdot_n <= -K_fz (1 - delta) f_n + delta M_f`` with ``delta = sech(k_h h)``.

    Derivation: on the ground (``delta* = 1``) the force rate is free in ``[-M_f, M_f]``; in the
    air (``delta* = 0``) ``fdot_n = -K_fz f_n`` (27a) drives the force to zero exponentially. The
    binary ``delta*`` becomes ``delta(p) = sech(k_h h(p))`` (30), 1 at ``h = 0`` and ~0 once
    ``k_h h`` exceeds a few units; the lower bound is relaxed to ``-M_f`` (32), letting the force
    fall faster, and only the normal component is bounded (34): friction then empties the planar
    components.

    Args:
        h: m. f_n: N. f_n_dot: N/s. k_h: 1/m. K_fz: 1/s. M_f: force-rate bound, N/s (>= 0).

    Returns:
        ``(2,)`` residuals ``[fdot_n + K_fz (1 - delta) f_n - delta M_f, -M_f - fdot_n]``,
        constrained ``<= 0`` (for CasADi arguments a ``vertcat``).
    """
    lib = _lib(h, f_n, f_n_dot, k_h, K_fz, M_f)
    delta = sech(k_h * h)
    upper = f_n_dot + K_fz * (1.0 - delta) * f_n - delta * M_f
    lower = -M_f - f_n_dot
    if lib is np:
        return np.stack([np.asarray(upper, float), np.asarray(lower, float)])
    return lib.vertcat(upper, lower)


def dcc_planar_scale(h, k_t):
    """``tau(p) = tanh(k_t h(p))`` (seed eq. 41-43): 0 on the ground, ~1 once ``k_t h >> 1``.

    Args:
        h: m. k_t: 1/m.

    Returns:
        The scale of the planar velocity, dimensionless, in ``[0, 1)`` for ``h >= 0``.
    """
    lib = _lib(h, k_t)
    return lib.tanh(k_t * h)


def dcc_planar_velocity(h, u_p, k_t):
    """DCC planar complementarity (seed eqs. 41-43): the point velocity from its control.

    ``pdot = [tanh(k_t h) u_x, tanh(k_t h) u_y, u_z]`` (flat ground, so plane coordinates are
    world coordinates): the planar velocity vanishes on the ground and shrinks as the point comes
    down; the normal velocity is the control. ``u_p`` is bounded by ``M_V`` elsewhere. A smaller
    ``k_t`` means higher swing heights for the same planar speed.

    Args:
        h: height, m. u_p: ``(3,)`` point velocity control in plane coordinates, m/s. k_t: 1/m.

    Returns:
        ``(3,)`` point velocity ``pdot``, world frame, m/s (numpy array or CasADi column).
    """
    lib = _lib(h, u_p, k_t)
    tau = dcc_planar_scale(h, k_t)
    if lib is np:
        u = np.asarray(u_p, dtype=float)
        return np.array([tau * u[0], tau * u[1], u[2]])
    return lib.vertcat(tau * u_p[0], tau * u_p[1], u_p[2])
