"""The whole-body DCC planner of the G1 (seed Sec. IV): the NLP, built once, solved many times.

Owns :class:`PlannerSettings` (bounds, weights, formulation), :func:`build_planner` (the CasADi
``Opti`` problem with the initial state and the references as parameters) and
:meth:`Planner.solve` (one IPOPT solve from a given initial state and guess). The receding-horizon
loop, which shifts solutions and writes plans, is :mod:`wbsim.planning.receding`.

Model (flat ground, ``n = e3``; every vector in the world frame):

* states per knot: base position ``p_B`` (m), quaternion ``rho = (w, x, y, z)``, joints ``s``
  (rad), CoM ``x`` (m), centroidal momentum ``h = [h_p; h_omega]`` (kg m/s, kg m²/s), sole points
  ``p_i`` (m) and forces ``f_i`` (N), ``i = 1..8`` (left foot first);
* controls per knot: base velocity ``v_B`` (m/s) and angular velocity ``omega`` (rad/s), joint
  velocities ``sdot`` (rad/s), point velocity controls ``u_i`` (m/s), force rates ``fdot_i`` (N/s);
* dynamics (trapezoidal collocation): ``pdot_B = v_B``; ``rhodot = 1/2 (0, omega) (x) rho``;
  ``sdot``; ``pdot_i = [tanh(k_t h_i) u_xy, u_z]`` (DCC planar, eqs. 41-43); ``fdot_i``;
  ``hdot = [sum f_i + m g; sum (p_i - x) x f_i]`` (eq. 44);
* algebraic, every knot: ``|rho| = 1``; ``p_i = FK_i(p_B, rho, s)`` (eq. 36); ``x = CoM(p_B, rho,
  s)`` (eq. 45); ``h = J_CMM(q) [v_B; omega; sdot]`` (eq. 46, all six rows: the linear momentum
  is then ``m xdot`` of the CoM of the joints, so the CoM ODE (5) is implied and not imposed
  twice);
* inequalities, every knot and point: ``h_i >= 0``, ``f_z >= 0``, friction pyramid
  ``|f_x|, |f_y| <= mu f_z``, ``|u_i| <= M_V``, ``|fdot_i| <= M_f``, the DCC normal formulation
  (:mod:`~wbsim.planning.complementarity`), feet lateral distance (eq. 66: the left feet centre in
  the right foot frame has ``y >= d_min``), feet relative height ``|z_l - z_r| <= M_hf`` (67),
  CoM height ``>= x_z_min`` (68), ``|h_omega| <= M_homega`` (69), joint limits;
* cost: CoM tracking of a reference per knot, posture (joints to the stand pose, base upright),
  velocities, point velocities, force rates, tangential forces, the sole points' lateral (and,
  to step in place, forward) distance to their stand positions, and the swing height: every
  point is pulled towards ``swing_height`` with one constant weight, so a foot that the CoM
  reference leaves unloaded gains by lifting, and none is told when. (A weight that grew as the
  force fell, ``exp(-f_z / f_swing)``, was tried first: its gradient rewards *loading* both feet,
  and no foot lifted.) At *rest knots* (a per-knot parameter ``r_k`` in ``[0, 1]``, 1 once the
  task's reference has come to rest: :meth:`wbsim.planning.receding.Task.rest`) the swing target
  is ``(1 - r_k) swing_height`` (the floor: both feet come down) and ``rest_momentum`` adds
  ``r_k |h_k|^2`` (the centroidal momentum, linear and angular: the robot stops).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wbsim.errors import UnknownNameError, WbsimError
from wbsim.planning import complementarity as cc
from wbsim.planning.kinematics import G1Kinematics

__all__ = [
    "CONTROL_FIELDS",
    "DEFAULT_PARAMS",
    "STATE_FIELDS",
    "Planner",
    "PlannerSettings",
    "SolveResult",
    "build_planner",
]

GRAVITY = 9.81
#: Per-knot state fields and their sizes (``n`` = joints, 8 points).
STATE_FIELDS = ("p_B", "rho", "s", "x", "h", "P", "F")
CONTROL_FIELDS = ("v_B", "omega", "s_dot", "U_P", "F_dot")
#: Default parameters of each DCC normal formulation for the G1.
DEFAULT_PARAMS: dict[str, dict[str, float]] = {
    "relaxed": {"eps": 0.004},
    "baumgarte": {"eps": 0.05, "K_bs": 20.0},
    "sech": {"k_h": 500.0, "K_fz": 250.0},
}


@dataclass
class PlannerSettings:
    """Everything that shapes the planner's NLP (SI units).

    Attributes:
        knots: horizon knots (the first is the given initial state). dt: knot spacing, s.
        formulation, params: DCC normal formulation (``relaxed``, ``baumgarte``, ``sech``) and its
            parameters (:data:`DEFAULT_PARAMS`).
        k_t: DCC planar scale, 1/m. M_V: point velocity control bound, m/s. M_f: force-rate bound,
            N/s. mu: friction coefficient of the pyramid.
        d_min: least lateral distance of the feet, m. M_hf: largest feet height difference, m.
        com_z_min: least CoM height, m. M_homega: angular momentum bound, kg m²/s.
        swing_height: height the swing term pulls the points to, m (at rest knots: 0).
        weights: cost weights by term name.
        ipopt: IPOPT options (replace the defaults of :data:`IPOPT_OPTIONS`).
    """

    knots: int = 10
    dt: float = 0.1
    formulation: str = "baumgarte"
    params: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_PARAMS["baumgarte"]))
    k_t: float = 40.0
    M_V: float = 1.0
    M_f: float = 2000.0
    mu: float = 0.3
    d_min: float = 0.15
    M_hf: float = 0.12
    com_z_min: float = 0.45
    M_homega: float = 10.0
    swing_height: float = 0.05
    weights: dict[str, float] = field(
        default_factory=lambda: {
            "com": 3000.0,
            "posture": 1.0,
            "base_orientation": 100.0,
            "joint_velocity": 0.1,
            "base_velocity": 1.0,
            "point_velocity": 1.0,
            "force_rate": 1e-5,
            "tangential_force": 1e-3,
            "swing": 300.0,
            "force_spread": 1e-4,
            "foot_lateral": 100.0,
            "foot_forward": 100.0,
            "rest_momentum": 1.0,
        }
    )
    ipopt: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Raise :class:`WbsimError` / :class:`UnknownNameError` on bad settings."""
        cc.check_params(self.formulation, self.params)
        if not (isinstance(self.knots, int) and 3 <= self.knots <= 40):
            raise WbsimError(f"knots must be an integer in [3, 40], got {self.knots!r}")
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise WbsimError(f"dt must be a positive number, got {self.dt!r}")


#: IPOPT options of the planner (MUMPS). Warm starts: bound pushes are small so the shifted
#: solution's contacts (``h = 0``) stay where they are; ``acceptable_constr_viol_tol`` is tight so
#: an "acceptable" exit still satisfies every constraint to 1e-7.
IPOPT_OPTIONS: dict[str, Any] = {
    "linear_solver": "mumps",
    "print_level": 0,
    "sb": "yes",
    "tol": 1e-6,
    "constr_viol_tol": 1e-8,
    "acceptable_tol": 1e-4,
    "acceptable_constr_viol_tol": 1e-7,
    "acceptable_iter": 5,
    "max_iter": 300,
    "mu_init": 1e-2,
    "warm_start_init_point": "yes",
    "bound_push": 1e-6,
    "bound_frac": 1e-6,
    "warm_start_bound_push": 1e-6,
    "warm_start_bound_frac": 1e-6,
    "warm_start_slack_bound_push": 1e-6,
    "warm_start_slack_bound_frac": 1e-6,
    "warm_start_mult_bound_push": 1e-6,
}


@dataclass
class SolveResult:
    """One solve of the planner.

    Attributes:
        status: IPOPT's return status. success: IPOPT reported success (or an acceptable level).
        iterations: IPOPT iterations. solve_time_s: wall time of the solve, s. cpu_time_s: CPU
            time of this process during the solve, s (the machine may be shared: wall time then
            exceeds it).
        states: field -> ``(knots, ...)`` arrays (``P``, ``F``: ``(knots, 8, 3)``).
        controls: field -> ``(knots, ...)`` arrays. cost: objective value.
        max_violation: largest violation of any constraint (IPOPT's ``g`` bounds), at the result.
        lam_g: the constraint multipliers (for a warm start).
    """

    status: str
    success: bool
    iterations: int
    solve_time_s: float
    states: dict[str, np.ndarray]
    controls: dict[str, np.ndarray]
    cost: float
    max_violation: float
    lam_g: np.ndarray | None = None
    cpu_time_s: float = float("nan")


def quat_rate(rho, omega):
    """``rhodot = 1/2 (0, omega) (x) rho`` for a world-frame angular velocity ``omega`` (CasADi)."""
    import casadi as ca

    w, v = rho[0], rho[1:4]
    return 0.5 * ca.vertcat(-ca.dot(omega, v), w * omega + ca.cross(omega, v))


class Planner:
    """The NLP of :func:`build_planner` and its solve. Attributes: ``settings``, ``kin``, ``opti``,
    ``X`` / ``U`` (field -> list over knots of ``Opti`` variables; ``X[...][0]`` are parameters),
    ``par`` (parameter name -> ``Opti`` parameter)."""

    def __init__(self, settings: PlannerSettings, kin: G1Kinematics, opti, X, U, par, cost, terms):
        self.settings, self.kin, self.opti = settings, kin, opti
        self.X, self.U, self.par, self.cost, self.terms = X, U, par, cost, terms
        self.build_time_s = 0.0

    # -- values ------------------------------------------------------------------------------------
    def set_parameters(
        self,
        initial: dict[str, np.ndarray],
        com_ref: np.ndarray,
        s_ref: np.ndarray,
        P_ref: np.ndarray,
        rest: np.ndarray | None = None,
    ) -> None:
        """Initial state (:data:`STATE_FIELDS`, ``P``/``F`` as ``(8, 3)``), CoM reference
        ``(knots, 3)`` m, posture reference ``(n,)`` rad, sole point reference ``(8, 3)`` m (its
        x and y enter the ``foot_forward`` and ``foot_lateral`` terms), rest flags ``(knots,)``
        in ``[0, 1]`` (module docstring; ``None``: no rest knot)."""
        for name in STATE_FIELDS:
            self.opti.set_value(self.par[name], _col(initial[name]))
        self.opti.set_value(self.par["com_ref"], np.asarray(com_ref, float).T)
        self.opti.set_value(self.par["s_ref"], np.asarray(s_ref, float))
        self.opti.set_value(self.par["P_ref"], _col(P_ref))
        N = self.settings.knots
        r = np.zeros(N) if rest is None else np.asarray(rest, float).reshape(N)
        if not np.all((r >= 0) & (r <= 1)):
            raise WbsimError(f"rest flags must be in [0, 1], got {r}")
        self.opti.set_value(self.par["rest"], r)

    def set_guess(
        self,
        states: dict[str, np.ndarray],
        controls: dict[str, np.ndarray],
        lam_g: np.ndarray | None = None,
    ) -> None:
        """Initial guess: ``(knots, ...)`` arrays per field (knot 0 of the states is ignored)."""
        N = self.settings.knots
        for name in STATE_FIELDS:
            for k in range(1, N):
                self.opti.set_initial(self.X[name][k], _col(states[name][k]))
        for name in CONTROL_FIELDS:
            for k in range(N):
                self.opti.set_initial(self.U[name][k], _col(controls[name][k]))
        if lam_g is not None:
            self.opti.set_initial(self.opti.lam_g, lam_g)

    def solve(self) -> SolveResult:
        """One IPOPT solve from the values set. Never raises on a failed solve: the status says
        it, and the last iterate is returned."""
        opti = self.opti
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            sol = opti.solve()
            value, stats = sol.value, sol.stats()
        except RuntimeError:
            value, stats = opti.debug.value, opti.stats()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        N = self.settings.knots
        states = {
            n: np.array([np.asarray(value(self.X[n][k])).ravel() for k in range(N)])
            for n in STATE_FIELDS
        }
        controls = {
            n: np.array([np.asarray(value(self.U[n][k])).ravel() for k in range(N)])
            for n in CONTROL_FIELDS
        }
        for d in (states, controls):
            for n in ("P", "F", "U_P", "F_dot"):
                if n in d:
                    d[n] = d[n].reshape(N, 8, 3)
        g = np.asarray(value(opti.g)).ravel()
        lbg, ubg = np.asarray(value(opti.lbg)).ravel(), np.asarray(value(opti.ubg)).ravel()
        viol = float(np.max(np.concatenate([lbg - g, g - ubg, [0.0]])))
        lam = np.asarray(value(opti.lam_g)).ravel()
        status = str(stats.get("return_status", "unknown"))
        ok = bool(stats.get("success", False)) or status == "Solved_To_Acceptable_Level"
        return SolveResult(
            status=status,
            success=ok,
            iterations=int(stats.get("iter_count", -1)),
            solve_time_s=float(stats.get("t_wall_total", wall)),
            states=states,
            controls=controls,
            cost=float(value(self.cost)),
            max_violation=viol,
            lam_g=lam,
            cpu_time_s=cpu,
        )


def _col(a) -> np.ndarray:
    return np.asarray(a, float).reshape(-1)


def build_planner(kin: G1Kinematics, settings: PlannerSettings | None = None) -> Planner:
    """Build the NLP once (CasADi ``Opti``; IPOPT with MUMPS, ``expand``): see the module
    docstring for the model. The initial state and the references are ``Opti`` parameters, so a
    receding-horizon loop only sets values and guesses between solves.

    Raises:
        WbsimError, UnknownNameError: bad settings (:meth:`PlannerSettings.check`).
    """
    import casadi as ca

    st = settings or PlannerSettings()
    st.check()
    t0 = time.perf_counter()
    N, dt, n = st.knots, st.dt, kin.n_joints
    m = kin.mass
    opti = ca.Opti()
    sizes = {
        "p_B": 3,
        "rho": 4,
        "s": n,
        "x": 3,
        "h": 6,
        "P": 24,
        "F": 24,
        "v_B": 3,
        "omega": 3,
        "s_dot": n,
        "U_P": 24,
        "F_dot": 24,
    }
    par = {name: opti.parameter(sizes[name]) for name in STATE_FIELDS}
    par["com_ref"] = opti.parameter(3, N)
    par["s_ref"] = opti.parameter(n)
    par["P_ref"] = opti.parameter(24)
    par["rest"] = opti.parameter(N)
    X = {
        name: [par[name]] + [opti.variable(sizes[name]) for _ in range(1, N)]
        for name in STATE_FIELDS
    }
    U = {name: [opti.variable(sizes[name]) for _ in range(N)] for name in CONTROL_FIELDS}

    def point_velocity(P, U_P):
        return ca.vertcat(
            *[
                cc.dcc_planar_velocity(P[3 * i + 2], U_P[3 * i : 3 * i + 3], st.k_t)
                for i in range(8)
            ]
        )

    def momentum_rate(x, P, F):
        lin = sum(F[3 * i : 3 * i + 3] for i in range(8)) + ca.vertcat(0, 0, -m * GRAVITY)
        ang = sum(ca.cross(P[3 * i : 3 * i + 3] - x, F[3 * i : 3 * i + 3]) for i in range(8))
        return ca.vertcat(lin, ang)

    def rates(k):
        return {
            "p_B": U["v_B"][k],
            "rho": quat_rate(X["rho"][k], U["omega"][k]),
            "s": U["s_dot"][k],
            "h": momentum_rate(X["x"][k], X["P"][k], X["F"][k]),
            "P": point_velocity(X["P"][k], U["U_P"][k]),
            "F": U["F_dot"][k],
        }

    r_prev = rates(0)
    for k in range(1, N):
        r_k = rates(k)
        for name in ("p_B", "rho", "s", "h", "P", "F"):
            opti.subject_to(X[name][k] == X[name][k - 1] + 0.5 * dt * (r_prev[name] + r_k[name]))
        r_prev = r_k

    lo, hi = kin_limits(kin)
    for k in range(N):
        p_B, rho, s = X["p_B"][k], X["rho"][k], X["s"][k]
        nu = ca.vertcat(U["v_B"][k], U["omega"][k], U["s_dot"][k])
        opti.subject_to(X["h"][k] == ca.mtimes(kin.cmm(p_B, rho, s), nu))
        if k == 0:
            continue
        P_fk, _R_l, R_r = kin.feet(p_B, rho, s)
        opti.subject_to(ca.sumsqr(rho) == 1)
        opti.subject_to(X["P"][k] == ca.reshape(P_fk, 24, 1))
        opti.subject_to(X["x"][k] == kin.com(p_B, rho, s))
        opti.subject_to(opti.bounded(lo, s, hi))
        P, F = X["P"][k], X["F"][k]
        c_l: Any = sum(P[3 * i : 3 * i + 3] for i in range(4)) / 4
        c_r: Any = sum(P[3 * i : 3 * i + 3] for i in range(4, 8)) / 4
        opti.subject_to(ca.mtimes(R_r[:, 1].T, c_l - c_r) >= st.d_min)
        opti.subject_to(opti.bounded(-st.M_hf, c_l[2] - c_r[2], st.M_hf))
        opti.subject_to(X["x"][k][2] >= st.com_z_min)
        opti.subject_to(opti.bounded(-st.M_homega, X["h"][k][3:6], st.M_homega))
    for k in range(N):
        P, F, U_P, F_dot = X["P"][k], X["F"][k], U["U_P"][k], U["F_dot"][k]
        opti.subject_to(opti.bounded(-st.M_V, U_P, st.M_V))
        opti.subject_to(opti.bounded(-st.M_f, F_dot, st.M_f))
        for i in range(8):
            hz, fx, fy, fz = P[3 * i + 2], F[3 * i], F[3 * i + 1], F[3 * i + 2]
            hz_dot, fz_dot = U_P[3 * i + 2], F_dot[3 * i + 2]
            if k > 0:
                opti.subject_to(hz >= 0)
                opti.subject_to(fz >= 0)
                opti.subject_to(opti.bounded(-st.mu * fz, fx, st.mu * fz))
                opti.subject_to(opti.bounded(-st.mu * fz, fy, st.mu * fz))
            if k > 0 or st.formulation != "relaxed":  # relaxed at knot 0: parameters only
                opti.subject_to(_normal(st, hz, fz, hz_dot, fz_dot) <= 0)

    w = st.weights
    terms: dict[str, Any] = {}
    s_ref, com_ref = par["s_ref"], par["com_ref"]
    terms["com"] = sum(ca.sumsqr(X["x"][k] - com_ref[:, k]) for k in range(1, N))
    terms["posture"] = sum(ca.sumsqr(X["s"][k] - s_ref) for k in range(1, N))
    terms["base_orientation"] = sum(ca.sumsqr(X["rho"][k][1:4]) for k in range(1, N))
    terms["joint_velocity"] = sum(ca.sumsqr(U["s_dot"][k]) for k in range(N))
    terms["base_velocity"] = sum(
        ca.sumsqr(U["v_B"][k]) + ca.sumsqr(U["omega"][k]) for k in range(N)
    )
    terms["point_velocity"] = sum(ca.sumsqr(U["U_P"][k]) for k in range(N))
    terms["force_rate"] = sum(ca.sumsqr(U["F_dot"][k]) for k in range(N))
    terms["tangential_force"] = sum(
        X["F"][k][3 * i] ** 2 + X["F"][k][3 * i + 1] ** 2 for k in range(1, N) for i in range(8)
    )
    rest = par["rest"]
    terms["swing"] = sum(
        (X["P"][k][3 * i + 2] - (1 - rest[k]) * st.swing_height) ** 2
        for k in range(1, N)
        for i in range(8)
    )
    terms["rest_momentum"] = sum(rest[k] * ca.sumsqr(X["h"][k]) for k in range(1, N))
    P_ref = par["P_ref"]
    terms["foot_lateral"] = sum(
        (X["P"][k][3 * i + 1] - P_ref[3 * i + 1]) ** 2 for k in range(1, N) for i in range(8)
    )
    terms["foot_forward"] = sum(
        (X["P"][k][3 * i] - P_ref[3 * i]) ** 2 for k in range(1, N) for i in range(8)
    )
    terms["force_spread"] = sum(
        (X["F"][k][3 * i + 2] - X["F"][k][3 * (i // 4 * 4) + 2]) ** 2
        for k in range(1, N)
        for i in range(8)
    )
    unknown = set(w) - set(terms)
    if unknown:
        raise UnknownNameError("cost term", min(unknown), terms)
    cost = sum(dt * w.get(name, 0.0) * expr for name, expr in terms.items())
    opti.minimize(cost)
    opti.solver(
        "ipopt",
        {"expand": True, "print_time": False, "record_time": True},
        {**IPOPT_OPTIONS, **st.ipopt},
    )
    planner = Planner(st, kin, opti, X, U, par, cost, terms)
    planner.build_time_s = time.perf_counter() - t0
    return planner


def _normal(st: PlannerSettings, hz, fz, hz_dot, fz_dot):
    """The DCC normal formulation's residuals (``<= 0``) at one point."""
    p = st.params
    if st.formulation == "relaxed":
        return cc.relaxed(hz, fz, p["eps"])
    if st.formulation == "baumgarte":
        return cc.dcc_baumgarte(hz, fz, hz_dot, fz_dot, p["K_bs"], p["eps"])
    return cc.dcc_sech(hz, fz, fz_dot, p["k_h"], p["K_fz"], st.M_f)


def kin_limits(kin: G1Kinematics) -> tuple[np.ndarray, np.ndarray]:
    """Joint position limits ``(lo, hi)`` of ``kin.joint_names``, rad (``wbsim.load_robot``)."""
    import wbsim

    robot = wbsim.load_robot("g1")
    idx = [robot.joint_names.index(j) for j in kin.joint_names]
    lim = robot.joint_limits[idx]
    return lim[:, 0], lim[:, 1]
