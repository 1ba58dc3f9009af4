"""The seed's toy comparison: a 1 kg point mass dropped from 0.1 m, a propeller force ``p`` and a
contact force ``f``, solved with each complementarity formulation over the seed's parameter grid.

Owns the NLP of the toy (CasADi ``Opti``, IPOPT with MUMPS), its IPOPT options, the sweep, and the
table / JSON of the results.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from wbsim.errors import WbsimError
from wbsim.planning import complementarity as cc

__all__ = [
    "GRID",
    "IPOPT_DEFAULTS",
    "IPOPT_OPTIONS",
    "ToyProblem",
    "ToyResult",
    "format_table",
    "run_toy",
    "solve_toy",
    "sweep",
]

#: The seed's parameter grid: formulation -> list of parameter dicts.
GRID: dict[str, list[dict[str, float]]] = {
    "relaxed": [{"eps": e} for e in (0.004, 0.008, 0.012, 0.016)],
    "baumgarte": [{"eps": e, "K_bs": k} for e, k in ((0.05, 20), (0.1, 20), (0.05, 10), (0.1, 10))],
    "sech": [
        {"k_h": kh, "K_fz": kf} for kh, kf in ((500, 250), (500, 125), (400, 250), (400, 125))
    ],
}

#: IPOPT options of the toy. What matters (measured, see README):
#: ``warm_start_init_point = yes`` with small ``warm_start_bound_push``/``bound_frac`` (and
#: ``bound_push``/``bound_frac``, which IPOPT also applies to the initial point): the default
#: pushes of 1e-2 move the resting guess (``x = 0``) 1 cm off the ground, where every formulation
#: forbids the force it carries, and IPOPT then ends in the propeller-holds-the-mass minimum.
#: ``mu_init = 1e-2`` (default 0.1): a large initial barrier centres the iterate the same way;
#: 1e-4 is too small (the sech settings then end in restoration failures).
#: ``nlp_scaling_method = none`` instead of gradient-based changes which sech settings fail, so the
#: default scaling is kept. ``hessian_approximation = limited-memory`` needs thousands of
#: iterations here. With IPOPT's defaults (:data:`IPOPT_DEFAULTS`) the four sech settings end in the
#: propeller-holds-the-mass minimum (``wbsim dcc toy --ipopt-defaults`` shows it).
IPOPT_OPTIONS: dict[str, Any] = {
    "tol": 1e-8,
    "constr_viol_tol": 1e-8,
    "max_iter": 3000,
    "print_level": 0,
    "sb": "yes",
    "linear_solver": "mumps",
    "mu_init": 1e-2,
    "warm_start_init_point": "yes",
    "bound_push": 1e-8,
    "bound_frac": 1e-8,
    "warm_start_bound_push": 1e-8,
    "warm_start_bound_frac": 1e-8,
    "warm_start_slack_bound_push": 1e-8,
    "warm_start_slack_bound_frac": 1e-8,
    "warm_start_mult_bound_push": 1e-8,
}

#: IPOPT's own defaults for the options above (for the comparison that shows the local minima).
IPOPT_DEFAULTS: dict[str, Any] = {
    "mu_init": 0.1,
    "warm_start_init_point": "no",
    "bound_push": 1e-2,
    "bound_frac": 1e-2,
}


@dataclass(frozen=True)
class ToyProblem:
    """The point mass of the seed's toy comparison (SI units).

    Attributes:
        mass: kg. g: gravity, m/s². x0: initial height, m. knots: number of knots.
        duration: s (knot spacing ``duration / (knots - 1)``). M_f: force-rate bound, N/s.
    """

    mass: float = 1.0
    g: float = 9.81
    x0: float = 0.1
    knots: int = 21
    duration: float = 2.0
    M_f: float = 100.0

    @property
    def dt(self) -> float:
        return self.duration / (self.knots - 1)

    def initial_guess(self) -> dict[str, np.ndarray]:
        """Free fall until the ground, then resting with ``f = m g``: ``x, v, f, p, fdot``
        ``(knots,)`` each. ``fdot`` is the force's finite-difference rate, clipped to ``M_f``."""
        t = np.arange(self.knots) * self.dt
        x = self.x0 - 0.5 * self.g * t**2
        flying = x > 0
        v = np.where(flying, -self.g * t, 0.0)
        f = np.where(flying, 0.0, self.mass * self.g)
        fdot = np.clip(np.gradient(f, self.dt), -self.M_f, self.M_f)
        return {"x": np.maximum(x, 0.0), "v": v, "f": f, "p": np.zeros(self.knots), "fdot": fdot}


@dataclass
class ToyResult:
    """One solve of the toy (one row of the table / JSON).

    Attributes:
        formulation: ``"relaxed"``, ``"baumgarte"`` or ``"sech"``. params: its parameters.
        status: IPOPT's return status (``"Solve_Succeeded"``, ...). success: IPOPT reported success.
        iterations: IPOPT iterations. solve_time_s: median wall time of IPOPT over the repeats, s.
        accuracy: ``mean_k(x_k f_k)``, N m. final_force: ``f`` at the last knot, N.
        cost: ``sum_k p_k^2``, N². local_minimum: the final contact force, or its mean over the
            last quarter of the horizon, is below half the weight (the propeller holds the mass;
            the global solutions rest on the ground); cause: why (empty when not a local minimum).
        max_violation: largest residual of the formulation's constraints over the knots (``<= 0``
            is satisfied), and of ``x >= 0``, ``f >= 0``, ``|fdot| <= M_f``, same units as each.
        solve_times_s: every repeat's time. trajectory: ``t, x, v, f, p, fdot`` lists.
    """

    formulation: str
    params: dict[str, float]
    status: str
    success: bool
    iterations: int
    solve_time_s: float
    accuracy: float
    final_force: float
    cost: float
    local_minimum: bool
    cause: str
    max_violation: float
    solve_times_s: list[float] = field(default_factory=list)
    trajectory: dict[str, list[float]] = field(default_factory=dict)

    def to_dict(self, trajectory: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not trajectory:
            d.pop("trajectory")
        return d


def complementarity_residuals(formulation: str, params: dict[str, float], x, f, v, fdot, M_f):
    """The formulation's residuals at one knot (``<= 0`` satisfied), numpy or CasADi.

    ``h = x``, ``hdot = v``, ``f_n = f``, ``fdot_n = fdot``.
    """
    if formulation == "relaxed":
        return cc.relaxed(x, f, params["eps"])
    if formulation == "baumgarte":
        return cc.dcc_baumgarte(x, f, v, fdot, params["K_bs"], params["eps"])
    return cc.dcc_sech(x, f, fdot, params["k_h"], params["K_fz"], M_f)


def solve_toy(
    formulation: str,
    params: dict[str, float],
    problem: ToyProblem = ToyProblem(),
    repeats: int = 1,
    ipopt_options: dict[str, Any] | None = None,
) -> ToyResult:
    """Solve the toy with one formulation (an ``Opti`` problem, IPOPT with MUMPS).

    NLP: states ``x`` (m), ``f`` (N), ``v`` (m/s), controls ``p`` (N), ``fdot`` (N/s) at each
    knot; trapezoidal collocation of ``xdot = v``, ``fdot = fdot``, ``vdot = (f + p)/m - g``;
    ``x >= 0``, ``f >= 0``, ``|fdot| <= M_f``, the complementarity at every knot; initial state
    ``(x0, 0, 0)``; cost ``sum p^2``; initial guess :meth:`ToyProblem.initial_guess`.

    Args:
        formulation: one of :data:`~wbsim.planning.complementarity.FORMULATIONS`.
        params: its parameters (``eps``; ``eps, K_bs``; ``k_h, K_fz``).
        repeats: solves (identical) whose median time is reported.
        ipopt_options: replace :data:`IPOPT_OPTIONS` entries.

    Raises:
        UnknownNameError: unknown formulation. WbsimError: missing / extra / non-positive
            parameters, ``repeats < 1``.
    """
    import casadi as ca

    cc.check_params(formulation, params)
    if repeats < 1:
        raise WbsimError(f"repeats must be >= 1, got {repeats}")
    pb, N = problem, problem.knots
    opti = ca.Opti()
    X = opti.variable(3, N)  # x, f, v
    U = opti.variable(2, N)  # p, fdot
    x, f, v = X[0, :], X[1, :], X[2, :]
    p, fdot = U[0, :], U[1, :]

    def rhs(k):
        return ca.vertcat(v[k], fdot[k], (f[k] + p[k]) / pb.mass - pb.g)

    opti.subject_to(X[:, 0] == ca.vertcat(pb.x0, 0.0, 0.0))
    for k in range(N - 1):
        opti.subject_to(X[:, k + 1] == X[:, k] + 0.5 * pb.dt * (rhs(k) + rhs(k + 1)))
    opti.subject_to(x >= 0)
    opti.subject_to(f >= 0)
    opti.subject_to(opti.bounded(-pb.M_f, fdot, pb.M_f))
    for k in range(N):
        opti.subject_to(
            complementarity_residuals(formulation, params, x[k], f[k], v[k], fdot[k], pb.M_f) <= 0
        )
    cost = ca.sumsqr(p)
    opti.minimize(cost)
    guess = pb.initial_guess()
    for name, var in (("x", x), ("f", f), ("v", v), ("p", p), ("fdot", fdot)):
        opti.set_initial(var, guess[name])
    opti.solver(
        "ipopt",
        {"print_time": False, "expand": True, "record_time": True},
        {**IPOPT_OPTIONS, **(ipopt_options or {})},
    )

    times: list[float] = []
    sol_vals = None
    stats: dict[str, Any] = {}
    for _ in range(repeats):
        try:
            sol = opti.solve()
            stats = sol.stats()
            sol_vals = {
                n: np.asarray(sol.value(e)).ravel()
                for n, e in (("x", x), ("f", f), ("v", v), ("p", p), ("fdot", fdot))
            }
        except RuntimeError:  # IPOPT did not succeed: keep its last iterate, report the status
            stats = opti.stats()
            sol_vals = {
                n: np.asarray(opti.debug.value(e)).ravel()
                for n, e in (("x", x), ("f", f), ("v", v), ("p", p), ("fdot", fdot))
            }
        times.append(float(stats.get("t_wall_total", stats.get("t_wall_solver", float("nan")))))
    assert sol_vals is not None
    return _result(formulation, params, pb, stats, times, sol_vals)


def _result(formulation, params, pb: ToyProblem, stats, times, s) -> ToyResult:
    res = np.array(
        [
            np.max(
                complementarity_residuals(
                    formulation, params, s["x"][k], s["f"][k], s["v"][k], s["fdot"][k], pb.M_f
                )
            )
            for k in range(pb.knots)
        ]
    )
    violation = float(
        max(res.max(), (-s["x"]).max(), (-s["f"]).max(), (np.abs(s["fdot"]) - pb.M_f).max())
    )
    final_force = float(s["f"][-1])
    weight = pb.mass * pb.g
    tail = slice(pb.knots - max(1, pb.knots // 4), pb.knots)
    f_tail, p_tail = float(np.mean(s["f"][tail])), float(np.mean(s["p"][tail]))
    local_min = min(f_tail, final_force) < 0.5 * weight
    cause = ""
    if local_min:
        cause = (
            f"the propeller holds the mass: over the last {pb.knots // 4} knots mean p = "
            f"{p_tail:.2f} N, mean contact force {f_tail:.2f} N, final {final_force:.2f} N "
            f"(weight {weight:.2f} N), "
            f"x = {1000 * float(np.mean(s['x'][tail])):.1f} mm"
        )
    status = str(stats.get("return_status", "unknown"))
    if local_min and not stats.get("success", False):
        cause = (
            f"IPOPT stopped ({status}) at a point that violates the constraints by "
            f"{violation:.3g}, on the way to the propeller-holds-the-mass solution; " + cause
        )
    return ToyResult(
        formulation=formulation,
        params=dict(params),
        status=status,
        success=bool(stats.get("success", False)),
        iterations=int(stats.get("iter_count", -1)),
        solve_time_s=float(statistics.median(times)),
        accuracy=float(np.mean(s["x"] * s["f"])),
        final_force=final_force,
        cost=float(np.sum(s["p"] ** 2)),
        local_minimum=local_min,
        cause=cause,
        max_violation=violation,
        solve_times_s=times,
        trajectory={
            "t": list(np.arange(pb.knots) * pb.dt),
            **{k: list(map(float, v)) for k, v in s.items()},
        },
    )


def sweep(
    repeats: int = 3,
    problem: ToyProblem = ToyProblem(),
    ipopt_options: dict[str, Any] | None = None,
) -> list[ToyResult]:
    """Every setting of :data:`GRID`, in its order."""
    return [
        solve_toy(name, params, problem, repeats, ipopt_options)
        for name, grid in GRID.items()
        for params in grid
    ]


def format_table(results: list[ToyResult]) -> str:
    """A plain-text table, one row per result (the README's toy table)."""
    head = (
        f"{'formulation':<11} {'params':<22} {'status':<24} {'iter':>5} {'time ms':>8} "
        f"{'mean x f (N m)':>15} {'final f (N)':>11} {'cost (N^2)':>11}  note"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        params = ", ".join(f"{k}={v:g}" for k, v in r.params.items())
        note = "LOCAL MINIMUM: " + r.cause if r.local_minimum else ""
        lines.append(
            f"{r.formulation:<11} {params:<22} {r.status:<24} {r.iterations:>5} "
            f"{1000 * r.solve_time_s:>8.1f} {r.accuracy:>15.3e} {r.final_force:>11.3f} "
            f"{r.cost:>11.3f}  {note}"
        )
    return "\n".join(lines)


def run_toy(
    json_path: str | None = None,
    repeats: int = 3,
    ipopt_defaults: bool = False,
    overwrite: bool = False,
) -> int:
    """``wbsim dcc toy``: the sweep, its table on stdout, the JSON (with trajectories) if asked.

    Returns 0 when every setting solved (a local minimum counts as solved, and is flagged), 1 when
    IPOPT failed on one.

    Raises:
        WbsimError: ``repeats < 1``; ``json_path`` cannot be written, or exists without
            ``overwrite`` (checked before the work).
    """
    import sys
    import time

    from wbsim.errors import check_output_file

    if json_path:
        check_output_file(json_path, "--json", overwrite)
    if repeats < 1:
        raise WbsimError(f"--repeats must be >= 1, got {repeats}")
    started = time.perf_counter()
    results = sweep(repeats, ipopt_options=IPOPT_DEFAULTS if ipopt_defaults else None)
    wall = time.perf_counter() - started
    print(format_table(results))
    print(f"\nwhole sweep: {wall:.2f} s wall ({len(results)} settings x {repeats} repeats)")
    if json_path:
        doc = {
            "problem": asdict(ToyProblem()),
            "ipopt_options": {**IPOPT_OPTIONS, **(IPOPT_DEFAULTS if ipopt_defaults else {})},
            "repeats": repeats,
            "sweep_wall_s": wall,
            "results": [r.to_dict(trajectory=True) for r in results],
        }
        from wbsim.jsonfile import write_json

        write_json(json_path, doc, indent=1)
    failed = [r for r in results if not r.success]
    for r in failed:
        print(f"wbsim dcc toy: {r.formulation} {r.params}: IPOPT {r.status}", file=sys.stderr)
    return 1 if failed else 0
