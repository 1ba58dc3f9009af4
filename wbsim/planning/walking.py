"""A walking pattern generator without an optimiser: footsteps, a CoM from the linear inverted
pendulum (LIPM) through its divergent component of motion (DCM), swing-foot trajectories.

Owns :class:`WalkingParameters`, :func:`plan_footsteps`, :class:`LipmTrajectory` (the LIPM's CoM,
DCM and ZMP in closed form for a piecewise-linear ZMP) and :func:`plan_walk` (all of it as a
:class:`~wbsim.reference.WholeBodyReference`). Pure numpy; no CasADi, no MuJoCo. Fast enough to
run in the loop (a 10-step plan: a few milliseconds).

The LIPM (Kajita 2001; Englsberger, Ott, Albu-Schaeffer 2015, "Three-dimensional bipedal walking
control based on divergent component of motion"): a point mass at constant height ``z_c`` above
the floor, ``omega = sqrt(g / z_c)``, zero-moment point (ZMP) ``p`` on the floor::

    cdd = omega^2 (c - p)              (horizontal components)
    xi  = c + cd / omega               (DCM)
    xid = omega (xi - p),  cd = omega (xi - c)

For a ZMP that is linear on a segment ``[0, T]``, ``p(tau) = p_0 + b tau`` (``b = (p_1 - p_0) /
T``), every solution is::

    xi(tau) = p(tau) + b / omega + A exp(omega (tau - T)),   A = xi(T) - p_1 - b / omega
    c(tau)  = p(tau) + (A / 2) exp(omega (tau - T)) + C exp(-omega tau)
    C = c(0) - p_0 - (A / 2) exp(-omega T)

(substitute: ``cd = omega (xi - c)`` holds, and ``cdd = omega^2 (c - p)``). The DCM is planned
backwards from its end (``xi = p`` where the ZMP stays for ever), so it never diverges; the CoM is
then integrated forwards in closed form from its initial position. To start at rest (``cd(0) = 0``
needs ``xi(0) = c(0)``; ``cdd(0) = 0`` needs ``p(0) = c(0)``) the first double support's ZMP goes
from under the CoM through one free knot, solved for (the DCM at 0 is affine in it), to the first
stance foot.

The ZMP path: under the CoM at 0; through the free knot; to the first stance foot at the first
lift-off; along the stance foot through each single support (``zmp_travel``); along a straight line to the next stance foot
in each double support; after the last landing, to the middle of the two feet in
``final_double_support`` and held there. A stance foot's ZMP point is its sole centre moved
``zmp_inward`` towards the other foot and ``zmp_forward`` along the foot; in single support it
moves ``zmp_travel`` along the foot (heel to toe), centred on that point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from wbsim.errors import UnknownNameError, WbsimError, is_real
from wbsim.reference import ContactPhase, Footstep, WholeBodyReference

__all__ = [
    "FEET",
    "LipmTrajectory",
    "WalkingParameters",
    "lipm_omega",
    "plan_footsteps",
    "plan_walk",
    "swing_profile",
]

#: The two feet a walking plan knows, left first.
FEET = ("left_foot", "right_foot")


def lipm_omega(com_height: float, gravity: float = 9.81) -> float:
    """``omega = sqrt(g / z_c)``, 1/s, of a LIPM with the CoM ``com_height`` m above the floor.

    Raises:
        WbsimError: a height or gravity that is not > 0.
    """
    if not (com_height > 0 and gravity > 0):
        raise WbsimError(
            f"LIPM: need com_height > 0 and gravity > 0, got {com_height!r}, {gravity!r}"
        )
    return math.sqrt(gravity / com_height)


@dataclass(frozen=True)
class WalkingParameters:
    """A gait (lengths in m, times in s).

    Attributes:
        step_length: forward advance of each foot per step beyond the other one (a foot moves
            ``2 step_length`` per step, the first and the last step ``step_length``); 0 steps in
            place.
        step_width: lateral distance between the two foot frames (``None``: as at the start).
        single_support: duration of each swing.
        double_support: duration of each double support between two swings.
        n_steps: number of steps (the last one brings the feet side by side).
        clearance: height the swing foot is lifted at mid-swing, above its start.
        touchdown_speed: downward speed of the swing foot at the planned landing, m/s (a small
            speed makes the sensed touch-down coincide with the planned one).
        initial_double_support: the weight shift before the first lift-off.
        final_double_support: the shift back to the middle after the last landing.
        first_swing: the foot that lifts first.
        zmp_inward: the stance ZMP's offset from the sole centre towards the other foot.
        zmp_forward: the stance ZMP's offset from the sole centre along the foot.
        zmp_travel: in each single support the ZMP moves this far along the stance foot, from
            ``-zmp_travel / 2`` to ``+zmp_travel / 2`` about its point (heel to toe when > 0: less
            forward CoM acceleration when walking).
        com_height: the CoM height above the floor (``None``: as at the start).
        sample_dt: the reference's sampling period.
    """

    step_length: float = 0.0
    step_width: float | None = None
    single_support: float = 0.5
    double_support: float = 0.4
    n_steps: int = 10
    clearance: float = 0.04
    touchdown_speed: float = 0.02
    initial_double_support: float = 0.8
    final_double_support: float = 1.0
    first_swing: str = "right_foot"
    zmp_inward: float = 0.0
    zmp_forward: float = 0.0
    zmp_travel: float = 0.0
    com_height: float | None = None
    sample_dt: float = 0.005

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "first_swing":
                if value not in FEET:
                    raise UnknownNameError("foot", value, FEET, context="(first_swing)")
                continue
            if value is None and f.name in ("step_width", "com_height"):
                continue
            if not (is_real(value) and math.isfinite(value)):
                raise WbsimError(
                    f"WalkingParameters: {f.name} must be a finite number, got {value!r}"
                )
        positive = (
            "single_support",
            "double_support",
            "initial_double_support",
            "final_double_support",
            "sample_dt",
        )
        for name in positive:
            if not getattr(self, name) > 0:
                raise WbsimError(
                    f"WalkingParameters: {name} must be > 0 s, got {getattr(self, name)!r}"
                )
        if not (isinstance(self.n_steps, (int, np.integer)) and self.n_steps >= 0):
            raise WbsimError(
                f"WalkingParameters: n_steps must be an integer >= 0, got {self.n_steps!r}"
            )
        if self.clearance < 0 or self.touchdown_speed < 0:
            raise WbsimError("WalkingParameters: clearance and touchdown_speed must be >= 0")
        if self.step_width is not None and not self.step_width > 0:
            raise WbsimError(
                f"WalkingParameters: step_width must be > 0 m, got {self.step_width!r}"
            )
        if self.com_height is not None and not self.com_height > 0:
            raise WbsimError(
                f"WalkingParameters: com_height must be > 0 m, got {self.com_height!r}"
            )

    @property
    def step_period(self) -> float:
        """``single_support + double_support``, s."""
        return self.single_support + self.double_support

    @classmethod
    def from_speed(cls, speed: float, **kwargs) -> WalkingParameters:
        """The gait that walks forward at ``speed`` m/s in steady state: ``step_length = speed *
        step_period`` (the other fields from ``kwargs``)."""
        base = cls(**kwargs)
        return replace(base, step_length=float(speed) * base.step_period)


def _yaw(R: np.ndarray) -> float:
    return math.atan2(R[1, 0], R[0, 0])


def plan_footsteps(
    params: WalkingParameters,
    feet: Mapping[str, tuple[np.ndarray, np.ndarray]],
    landing_height: Mapping[str, float] | None = None,
) -> list[Footstep]:
    """The steps of ``params`` from the feet's start poses.

    Args:
        params: the gait.
        feet: ``{"left_foot": (position (3,), rotation (3, 3)), "right_foot": ...}``, the foot
            frames at the start, world.
        landing_height: per foot, the height of its frame when it stands level on the floor, m
            (``None``: its height at the start; a foot that starts tilted, e.g. after reset noise,
            would then land a little above the floor).

    Returns:
        ``params.n_steps`` :class:`~wbsim.reference.Footstep`, alternating from
        ``params.first_swing``. Frame of the walk: its origin midway between the feet, x along
        their mean heading, y to the left. Step ``k`` (1-based) puts its foot at ``x = k L`` for
        ``k < n`` and the last at ``x = (n - 1) L``, beside the other foot (``L`` the step
        length); each foot keeps its side at ``+-step_width / 2``.
    """
    missing = [f for f in FEET if f not in feet]
    if missing:
        raise UnknownNameError("foot", missing[0], list(feet), context="(walking needs both)")
    pl, pr = (np.asarray(feet[f][0], dtype=float) for f in FEET)
    yaw = math.atan2(
        math.sin(_yaw(feet["left_foot"][1])) + math.sin(_yaw(feet["right_foot"][1])),
        math.cos(_yaw(feet["left_foot"][1])) + math.cos(_yaw(feet["right_foot"][1])),
    )
    fwd = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    left = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
    mid = 0.5 * (pl + pr)
    width = float(np.dot(pl - pr, left)) if params.step_width is None else float(params.step_width)
    x0 = {"left_foot": float(np.dot(pl - mid, fwd)), "right_foot": float(np.dot(pr - mid, fwd))}
    z = (
        {"left_foot": float(pl[2]), "right_foot": float(pr[2])}
        if landing_height is None
        else {f: float(landing_height[f]) for f in FEET}
    )
    side = {"left_foot": 0.5 * width, "right_foot": -0.5 * width}
    steps = []
    foot = params.first_swing
    n, L = params.n_steps, params.step_length
    t = params.initial_double_support
    for k in range(1, n + 1):
        x = (k if k < n else n - 1) * L + (x0[foot] if L == 0 else 0.0)
        pos = mid + x * fwd + side[foot] * left
        pos[2] = z[foot]
        steps.append(Footstep(foot, pos, yaw, t, t + params.single_support))
        t += params.step_period
        foot = "left_foot" if foot == "right_foot" else "right_foot"
    return steps


class LipmTrajectory:
    """The LIPM's CoM, DCM and ZMP for a piecewise-linear ZMP (module docstring), horizontal
    components.

    Args:
        knot_times: ``(K,)`` increasing, s; the ZMP is linear between knots and stays at the last
            knot for ever after.
        knot_zmp: ``(K, 2)`` ZMP at the knots, m.
        omega: 1/s.
        com0: ``(2,)`` CoM at ``knot_times[0]``, m.
        dcm0: ``None``: the DCM is planned backwards from ``xi = p`` at the last knot (it stays
            bounded for ever); ``(2,)``: the DCM at ``knot_times[0]`` (a forward solution from a
            given state: it diverges after the last knot unless it ends on the ZMP).

    Attributes:
        knot_dcm: ``(K, 2)`` the DCM at the knots.
        knot_com: ``(K, 2)`` the CoM at the knots (forward).
    """

    def __init__(
        self,
        knot_times: Sequence[float] | np.ndarray,
        knot_zmp: np.ndarray,
        omega: float,
        com0: np.ndarray,
        dcm0: np.ndarray | None = None,
    ):
        t = np.asarray(knot_times, dtype=float)
        p = np.asarray(knot_zmp, dtype=float)
        if t.ndim != 1 or p.shape != (t.size, 2) or t.size < 1 or np.any(np.diff(t) <= 0):
            raise WbsimError("LipmTrajectory: need increasing knot_times (K,) and knot_zmp (K, 2)")
        self.t, self.p, self.omega = t, p, float(omega)
        w = self.omega
        K = t.size
        T = np.diff(t)
        b = np.diff(p, axis=0) / T[:, None]  # (K-1, 2) ZMP slopes
        xi = np.empty((K, 2))
        A = np.zeros((K, 2))  # per segment: xi = p + b / w + A exp(w (tau - T_ref))
        T_ref = np.append(T, np.inf)
        if dcm0 is None:
            xi[-1] = p[-1]
            for i in range(K - 2, -1, -1):
                A[i] = xi[i + 1] - p[i + 1] - b[i] / w
                xi[i] = p[i] + b[i] / w + A[i] * math.exp(-w * T[i])
        else:
            T_ref[:] = 0.0  # exp(w tau): forward
            xi[0] = np.asarray(dcm0, dtype=float)
            for i in range(K - 1):
                A[i] = xi[i] - p[i] - b[i] / w
                xi[i + 1] = p[i + 1] + b[i] / w + A[i] * math.exp(w * T[i])
            A[-1] = xi[-1] - p[-1]
        # CoM: c = p + (A / 2) exp(w (tau - T_ref)) + C exp(-w tau)
        c = np.empty((K, 2))
        C = np.empty((K, 2))
        c[0] = np.asarray(com0, dtype=float)
        for i in range(K - 1):
            C[i] = c[i] - p[i] - 0.5 * A[i] * math.exp(-w * T_ref[i])
            c[i + 1] = (
                p[i + 1] + 0.5 * A[i] * math.exp(w * (T[i] - T_ref[i])) + C[i] * math.exp(-w * T[i])
            )
        C[-1] = c[-1] - p[-1] - 0.5 * A[-1] * (1.0 if dcm0 is not None else 0.0)
        self._T = T_ref
        self._b = np.vstack([b, np.zeros((1, 2))])
        self._A, self._C = A, C
        self.knot_dcm, self.knot_com = xi, c

    def evaluate(self, times: Sequence[float] | np.ndarray) -> dict[str, np.ndarray]:
        """``zmp``, ``dcm``, ``com``, ``com_velocity``, ``com_acceleration``, each ``(N, 2)``, at
        ``times (N,)`` s (before the first knot: the first segment's formulas)."""
        tt = np.atleast_1d(np.asarray(times, dtype=float))
        w = self.omega
        i = np.clip(np.searchsorted(self.t, tt, side="right") - 1, 0, len(self.t) - 1)
        tau = (tt - self.t[i])[:, None]
        T = self._T[i][:, None]
        b, A, C = self._b[i], self._A[i], self._C[i]
        grow = np.where(np.isfinite(T), np.exp(w * (tau - np.where(np.isfinite(T), T, 0.0))), 0.0)
        decay = np.exp(-w * tau)
        p = self.p[i] + b * tau
        return {
            "zmp": p,
            "dcm": p + b / w + A * grow,
            "com": p + 0.5 * A * grow + C * decay,
            "com_velocity": b + 0.5 * w * A * grow - w * C * decay,
            "com_acceleration": w * w * (0.5 * A * grow + C * decay),
        }


def swing_profile(
    clearance: float, duration: float, touchdown_speed: float = 0.0
) -> np.polynomial.Polynomial:
    """The vertical lift ``z(s)``, m, of a swing over the phase progress ``s`` in [0, 1]: the
    sextic with ``z(0) = z'(0) = z''(0) = 0`` (it leaves the floor without a jump in
    acceleration), ``z(1) = 0``, ``z''(1) = 0`` and a landing speed of ``touchdown_speed`` m/s
    (``z'(1) = -touchdown_speed duration``: it arrives without braking hard at the last moment),
    and its highest point ``clearance`` m (the seventh condition, ``z(1/2)``, is solved for by
    bisection so that the maximum over [0, 1] is ``clearance``)."""
    V = np.array(
        [
            [1, 0, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0, 0],
            [0, 0, 2, 0, 0, 0, 0],
            [0.5**k for k in range(7)],
            [1, 1, 1, 1, 1, 1, 1],
            [0, 1, 2, 3, 4, 5, 6],
            [0, 0, 2, 6, 12, 20, 30],
        ],
        dtype=float,
    )
    shape = np.polynomial.Polynomial(np.linalg.solve(V, [0.0, 0, 0, 1, 0, 0, 0]))
    landing = np.polynomial.Polynomial(
        np.linalg.solve(V, [0.0, 0, 0, 0, 0, -touchdown_speed * duration, 0])
    )

    def peak(c: float) -> float:
        p = c * shape + landing
        roots = np.asarray(p.deriv().roots(), dtype=complex)
        s = [float(r.real) for r in roots if abs(r.imag) < 1e-12 and 0.0 < float(r.real) < 1.0]
        return float(np.max(p(np.array([0.0, 1.0, *s]))))

    lo, hi = 0.0, max(2.0 * clearance, 1e-12)
    if clearance <= 0.0:
        return landing
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if peak(mid) < clearance else (lo, mid)
    return 0.5 * (lo + hi) * shape + landing


#: minimum-jerk progress on [0, 1] and its derivatives (zero velocity and acceleration at the ends)
_QUINTIC = np.polynomial.Polynomial([0, 0, 0, 10, -15, 6])


def plan_walk(
    params: WalkingParameters,
    com: np.ndarray,
    feet: Mapping[str, tuple[np.ndarray, np.ndarray]],
    sole_centres: Mapping[str, np.ndarray],
    base_rotation: np.ndarray | None = None,
    mass: float | None = None,
    gravity: float = 9.81,
    floor_height: float = 0.0,
    duration: float | None = None,
    sole_depth: Mapping[str, float] | None = None,
    momentum: bool = True,
) -> WholeBodyReference:
    """The walk of ``params`` from rest as a :class:`~wbsim.reference.WholeBodyReference`.

    Args:
        params: the gait.
        com: ``(3,)`` the CoM at the start, world, m (the robot at rest).
        feet: ``{"left_foot": (position (3,), rotation (3, 3)), "right_foot": ...}``, foot frames
            at the start.
        sole_centres: ``{"left_foot": (2,) or (3,), ...}`` the centre of each sole on the floor at
            the start, world, m (its offset from the foot frame is kept through the walk).
        base_rotation: ``(3, 3)`` base rotation at the start (its roll and pitch are kept, its
            yaw follows the feet); default identity.
        mass: the robot's mass, kg, for the feed-forward foot wrenches (``None``: none).
        gravity: m/s^2.
        floor_height: the floor's z, m (the ZMP's height).
        duration: sample the reference up to this time, s (default: 1 s after the walk's end).
        sole_depth: per foot, the height of the foot frame above its sole when level, m: a step
            lands the frame at ``floor_height + sole_depth`` (``None``: at its start height).
        momentum: give the LIPM's centroidal angular momentum (0) as a reference, which asks a
            tracking controller to hold it (``False``: no momentum in the reference).

    Returns:
        The reference: CoM, DCM and ZMP of :class:`LipmTrajectory` (CoM height constant),
        footsteps of :func:`plan_footsteps`, swing feet on :func:`swing_profile` vertically and
        a minimum-jerk path horizontally and in yaw, the contact phases (``"initial_shift"``,
        ``"swing_<foot>"``, ``"double_support"``, ``"stand"``), foot wrenches (the LIPM's force
        ``m (cdd + g e_z)`` shared in proportion to the ZMP's place between the two stance ZMP
        points, each foot's centre of pressure at its ZMP point moved by what puts the total
        at the planned ZMP), and (``momentum``) a centroidal angular momentum of 0 (the LIPM's,
        with rate 0).

    Raises:
        WbsimError: a CoM not above the floor; the free ZMP knot of the start outside the
            feet's bounding box (an initial double support too short for the first shift).
    """
    com = np.asarray(com, dtype=float)
    z_c = (float(com[2]) - floor_height) if params.com_height is None else params.com_height
    w = lipm_omega(z_c, gravity)
    steps = plan_footsteps(
        params,
        feet,
        None if sole_depth is None else {f: floor_height + float(sole_depth[f]) for f in FEET},
    )
    pose = {
        f: (np.asarray(feet[f][0], dtype=float), np.asarray(feet[f][1], dtype=float)) for f in FEET
    }
    # the sole centre's offset from the foot frame, in the foot's yaw frame (kept through the walk)
    sole_off = {}
    for f in FEET:
        sc = np.asarray(sole_centres[f], dtype=float)[:2]
        d = sc - pose[f][0][:2]
        yaw = _yaw(pose[f][1])
        sole_off[f] = np.array(
            [
                math.cos(yaw) * d[0] + math.sin(yaw) * d[1],
                -math.sin(yaw) * d[0] + math.cos(yaw) * d[1],
            ]
        )

    def zmp_point(
        foot: str, pos: np.ndarray, yaw: float, other: np.ndarray, inward: float = params.zmp_inward
    ) -> np.ndarray:
        c, s = math.cos(yaw), math.sin(yaw)
        off = sole_off[foot] + np.array([params.zmp_forward, 0.0])
        p = pos[:2] + np.array([c * off[0] - s * off[1], s * off[0] + c * off[1]])
        lateral = np.array([-s, c])
        side = float(np.dot(other[:2] - pos[:2], lateral))
        if side != 0.0:
            p = p + inward * math.copysign(1.0, side) * lateral
        return p

    # -- ZMP knots ------------------------------------------------------------------------------
    place = {f: (pose[f][0].copy(), _yaw(pose[f][1])) for f in FEET}
    other = {"left_foot": "right_foot", "right_foot": "left_foot"}
    t0 = params.initial_double_support
    knots_t = [0.0, 0.5 * t0]
    knots_p = [com[:2].copy(), np.zeros(2)]  # the free knot: solved below

    def stance_path(foot: str) -> tuple[np.ndarray, np.ndarray]:
        """The ZMP's start and end on ``foot`` in its single support (``zmp_travel``)."""
        pos, yaw = place[foot]
        p = zmp_point(foot, pos, yaw, place[other[foot]][0])
        half = 0.5 * params.zmp_travel * np.array([math.cos(yaw), math.sin(yaw)])
        return p - half, p + half

    if steps:
        start, end = stance_path(other[steps[0].foot])
        knots_t.append(t0)
        knots_p.append(start)
        for k, st in enumerate(steps):
            place[st.foot] = (st.position.copy(), st.yaw)
            knots_t.append(st.land_time)
            knots_p.append(end)  # along the stance foot
            if k + 1 < len(steps):
                # the foot that just landed is the next stance foot
                start, end = stance_path(st.foot)
                knots_t.append(steps[k + 1].lift_time)
                knots_p.append(start)
        t_end = steps[-1].land_time + params.final_double_support
    else:
        t_end = t0
    centre = 0.5 * (
        zmp_point(
            "left_foot", place["left_foot"][0], place["left_foot"][1], place["right_foot"][0], 0.0
        )
        + zmp_point(
            "right_foot", place["right_foot"][0], place["right_foot"][1], place["left_foot"][0], 0.0
        )
    )  # between the soles
    knots_t.append(t_end)
    knots_p.append(centre)
    kt, kp = np.array(knots_t), np.array(knots_p)
    # the free knot: xi(0) is affine in it, xi(0) = a + beta p_m (x and y alike)
    a = LipmTrajectory(kt, kp, w, com[:2]).knot_dcm[0]
    kp1 = kp.copy()
    kp1[1] = 1.0
    beta = float((LipmTrajectory(kt, kp1, w, com[:2]).knot_dcm[0] - a)[0])
    kp[1] = (com[:2] - a) / beta
    lo = np.minimum(pose["left_foot"][0][:2], pose["right_foot"][0][:2]) - 0.1
    hi = np.maximum(pose["left_foot"][0][:2], pose["right_foot"][0][:2]) + 0.15
    if np.any(kp[1] < lo) or np.any(kp[1] > hi):
        raise WbsimError(
            f"plan_walk: the start's ZMP knot {kp[1].round(3).tolist()} leaves the "
            f"feet: lengthen initial_double_support ({t0} s)"
        )
    lipm = LipmTrajectory(kt, kp, w, com[:2])

    # -- samples --------------------------------------------------------------------------------
    horizon = t_end + 1.0 if duration is None else float(duration)
    times = np.arange(0.0, horizon + 0.5 * params.sample_dt, params.sample_dt)
    N = times.size
    ev = lipm.evaluate(times)
    z = np.full(N, float(com[2]) if params.com_height is None else floor_height + z_c)

    def lift(xy: np.ndarray, zz: np.ndarray) -> np.ndarray:
        return np.column_stack([xy, zz])

    c = lift(ev["com"], z)
    cd = lift(ev["com_velocity"], np.zeros(N))
    cdd = lift(ev["com_acceleration"], np.zeros(N))
    zmp = lift(ev["zmp"], np.full(N, floor_height))
    dcm = lift(ev["dcm"], z)

    fpos = np.empty((N, 2, 3))
    fvel = np.zeros((N, 2, 3))
    facc = np.zeros((N, 2, 3))
    fyaw = np.empty((N, 2))
    for k, f in enumerate(FEET):
        fpos[:, k] = pose[f][0]
        fyaw[:, k] = _yaw(pose[f][1])
    d1, d2 = _QUINTIC.deriv(1), _QUINTIC.deriv(2)
    for st in steps:
        k = FEET.index(st.foot)
        T = st.land_time - st.lift_time
        inside = (times >= st.lift_time) & (times < st.land_time)
        after = times >= st.land_time
        start = fpos[np.searchsorted(times, st.lift_time) - 1 if st.lift_time > 0 else 0, k].copy()
        yaw0 = fyaw[np.searchsorted(times, st.lift_time) - 1 if st.lift_time > 0 else 0, k]
        s = (times[inside] - st.lift_time) / T
        delta = st.position - start
        up = swing_profile(params.clearance, T, params.touchdown_speed)
        q, q1, q2 = _QUINTIC(s), d1(s) / T, d2(s) / T**2
        fpos[inside, k] = start + np.outer(q, delta)
        fpos[inside, k, 2] += up(s)
        fvel[inside, k] = np.outer(q1, delta)
        fvel[inside, k, 2] += up.deriv(1)(s) / T
        facc[inside, k] = np.outer(q2, delta)
        facc[inside, k, 2] += up.deriv(2)(s) / T**2
        dyaw = math.remainder(st.yaw - yaw0, 2 * math.pi)
        fyaw[inside, k] = yaw0 + q * dyaw
        fpos[after, k] = st.position
        fyaw[after, k] = yaw0 + dyaw
    frot = _rz_many(fyaw)
    R_b0 = np.eye(3) if base_rotation is None else np.asarray(base_rotation, dtype=float)
    mean0 = math.atan2(np.sin(fyaw[0]).sum(), np.cos(fyaw[0]).sum())
    mean = np.arctan2(np.sin(fyaw).sum(axis=1), np.cos(fyaw).sum(axis=1))
    base_rot = np.einsum("nij,jk->nik", _rz_many((mean - mean0)[:, None])[:, 0], R_b0)

    # -- phases ---------------------------------------------------------------------------------
    both = frozenset(FEET)
    phases = [ContactPhase(0.0, both, "initial_shift")]
    for k, st in enumerate(steps):
        phases.append(ContactPhase(st.lift_time, both - {st.foot}, f"swing_{st.foot}"))
        name = "stand" if k == len(steps) - 1 else "double_support"
        phases.append(ContactPhase(st.land_time, both, name))
    if not steps:
        phases[0] = ContactPhase(0.0, both, "stand")

    wrench = None
    if mass is not None:
        wrench = _foot_wrenches(times, phases, fpos, fyaw, zmp, cdd, mass, gravity, zmp_point)
    return WholeBodyReference(
        times=times,
        com=c,
        com_velocity=cd,
        com_acceleration=cdd,
        base_rotation=base_rot,
        foot_names=FEET,
        foot_position=fpos,
        foot_velocity=fvel,
        foot_acceleration=facc,
        foot_rotation=frot,
        phases=tuple(phases),
        foot_wrench=wrench,
        zmp=zmp,
        dcm=dcm,
        # the LIPM's point mass has no angular momentum about the CoM: asked of the whole body,
        # the swing leg's momentum is balanced by the upper body, not by the stance sole
        angular_momentum=np.zeros((times.size, 3)) if momentum else None,
        angular_momentum_rate=np.zeros((times.size, 3)) if momentum else None,
        footsteps=tuple(steps),
        source=(
            f"walking pattern generator: {params.n_steps} steps of {params.step_length:g} m, "
            f"{params.single_support:g} s + {params.double_support:g} s, omega {w:.3f} 1/s"
        ),
    )


def _rz_many(yaw: np.ndarray) -> np.ndarray:
    """``(..., 3, 3)`` rotations about z by ``yaw (...)``."""
    c, s = np.cos(yaw), np.sin(yaw)
    R = np.zeros(yaw.shape + (3, 3))
    R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1], R[..., 2, 2] = c, -s, s, c, 1.0
    return R


def _foot_wrenches(times, phases, fpos, fyaw, zmp, cdd, mass, gravity, zmp_point) -> np.ndarray:
    """``(N, 2, 6)`` feed-forward foot wrenches (see :func:`plan_walk`)."""
    N = times.size
    out = np.zeros((N, 2, 6))
    force = mass * (cdd + np.array([0.0, 0.0, gravity]))  # (N, 3) on the robot
    starts = np.array([p.start for p in phases])
    idx = np.searchsorted(starts, times, side="right") - 1
    for n in range(N):
        cs = phases[idx[n]].contact_set
        pts = {}
        for k, f in enumerate(FEET):
            o = fpos[n, 1 - k]
            pts[f] = zmp_point(f, fpos[n, k], float(fyaw[n, k]), o)
        p = zmp[n, :2]
        if len(cs) == 1:
            (f,) = tuple(cs)
            share = {f: 1.0}
            cop = {f: p}
        else:
            a, b = pts["left_foot"], pts["right_foot"]
            d = b - a
            alpha = float(np.clip(np.dot(p - a, d) / float(np.dot(d, d)), 0.0, 1.0))
            share = {"left_foot": 1.0 - alpha, "right_foot": alpha}
            resid = p - ((1.0 - alpha) * a + alpha * b)
            cop = {f: pts[f] + resid for f in FEET}
        for k, f in enumerate(FEET):
            if f not in share:
                continue
            fk = share[f] * force[n]
            r = np.array([cop[f][0], cop[f][1], zmp[n, 2]]) - fpos[n, k]
            out[n, k, :3] = fk
            out[n, k, 3:] = np.cross(r, fk)
    return out
