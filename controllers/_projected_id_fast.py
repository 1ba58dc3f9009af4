"""Speed kernel of :mod:`wbsim.controllers.contact_projected_id`: one step of the
contact-projected inverse dynamics of one contact set on preallocated arrays.

The same quantities as the readable path (``compute_snapshot``, ``contact_kinematics``,
``contact_projection``, the tasks' rows and ``build_task_stack`` / ``solve_task_stack``,
``build_contact_qp`` for the exact QP; docs/controllers.md, "The projected-ID kernel"), with few
Python calls: LAPACK ``dposv`` factorises and solves at once (``M`` with ``J_c^T``, then
``J_c M^-1 J_c^T``, then the stack's normal matrix); in the null space the stack multiplies
``[N_c | qdd_p]`` at once and reads the posture rows of it; the QP's constant rows (friction, which
torques a force reaches) are laid out once and DAQP is called directly on its two-sided form. It
works on plain arrays and Pinocchio's model, owns its Pinocchio data and knows nothing of the
controller; ``tests/test_contact_projected_id.py`` checks it against the readable path.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv, dpotrs

try:
    import daqp
except ImportError:  # pragma: no cover - qpsolvers then lists no "daqp" either
    daqp = None

__all__ = ["KernelError", "ProjectedIDKernel", "TaskSpec"]

_LWA = pin.LOCAL_WORLD_ALIGNED
_EQUALITY = 5
_JWJ = "J_c W^-1 J_c^T (contact Jacobian rank-deficient?)"
_sum = np.add.reduce


class KernelError(Exception):
    """A factorisation failed: ``what`` names the matrix (``"M"``, ``J_c W^-1 J_c^T``, the
    stack's normal matrix); ``projection`` is ``True`` when the projection failed."""

    def __init__(self, message: str, projection: bool):
        super().__init__(message)
        self.projection = projection


class TaskSpec(NamedTuple):
    """One task of the stack: ``kind`` (``"com"``, ``"position"``, ``"orientation"``,
    ``"posture"``), its Pinocchio frame (``-1`` if none) and its ``q`` / ``v`` indices (posture)."""

    kind: str
    frame_id: int = -1
    q_index: Any = None
    v_index: Any = None


def _as_slice(idx):
    idx = np.asarray(idx, dtype=int)
    if idx.ndim == 1 and idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def _posv(A: np.ndarray, B: np.ndarray, what: str, pivot_rtol: float | None = None,
          projection: bool = True) -> np.ndarray:
    """``A^-1 B`` (``A`` SPD, its lower triangle read) by one LAPACK ``dposv``."""
    L, X, info = dposv(A, B, lower=1)
    if info != 0:
        raise KernelError(f"{what} is not symmetric positive definite (dpotrf info={info})",
                          projection)
    if pivot_rtol is not None:
        d = L.diagonal()
        if d.size and np.minimum.reduce(d) ** 2 <= pivot_rtol * np.maximum.reduce(A.diagonal()):
            raise KernelError(f"{what} is (numerically) singular: smallest Cholesky pivot "
                              f"{d.min() ** 2:.3g}", projection)
    return X


class ProjectedIDKernel:
    """One contact set's per-step pipeline (see the module docstring).

    Args:
        model: the Pinocchio model.
        foot_frame_ids: Pinocchio frame of each foot in contact.
        points_in_foot: ``(n_feet, 4, 3)`` sole points in their foot frame, m.
        tasks: the stack's tasks, in order (:class:`TaskSpec`).
        actuated_v: the actuated rows of ``v`` (a slice for a free-flyer root).
        W_factor: lower Cholesky factor of a constant projection weight, or ``None`` for ``M``.
        nullspace: solve the tasks in the contact null space (else freely, then project).
        regularization: the stack's Tikhonov term.
        damping_v: ``(nv,)`` viscous damping of the actuated rows, or ``None``.
        friction: ``(5 n_points, 3 n_points)`` cone rows of the exact QP, or ``None`` (no QP).
        reached: ``(n_joints,)`` bool, the joints a contact force reaches.
        tau_limit: ``(n_joints,)`` N·m.

    After :meth:`kinematics`: ``M``, ``h`` (damping included), ``g``, ``com``, ``Jc``,
    ``Jc_dot_v``, ``grasp``, ``foot_rotations``, ``points`` ``(n_points, 3)``, ``data``. After
    :meth:`accelerations`: ``Jc_pinv``, ``Nc``, ``particular``, ``qdd_des``, ``qdd_star``,
    ``errors`` (each task's error).
    """

    def __init__(self, model: pin.Model, foot_frame_ids: tuple[int, ...],
                 points_in_foot: np.ndarray, tasks: tuple[TaskSpec, ...],
                 actuated_v: slice | np.ndarray, W_factor: np.ndarray | None, nullspace: bool,
                 regularization: float, damping_v: np.ndarray | None,
                 friction: np.ndarray | None, reached: np.ndarray, tau_limit: np.ndarray):
        self.model, self.data = model, model.createData()
        nv = self.nv = model.nv
        self.frame_ids = tuple(int(f) for f in foot_frame_ids)
        nf = self.nf = len(self.frame_ids)
        self.points_in_foot = np.asarray(points_in_foot, dtype=float).reshape(nf, 4, 3)
        self.act = actuated_v
        mask = np.ones(nv, dtype=bool)
        mask[actuated_v] = False
        self.unact = _as_slice(np.flatnonzero(mask))
        self.W_factor, self.nullspace = W_factor, bool(nullspace)
        self.damping_v = damping_v
        # M from the upper triangle of Pinocchio's column-major storage: flat indices of the
        # entry (min(i, j), max(i, j)) for each (i, j)
        row, col = np.divmod(np.arange(nv * nv), nv)
        self._mirror = np.maximum(row, col) * nv + np.minimum(row, col)
        self.M = np.empty((nv, nv))
        self.I = np.eye(nv)
        self.I.setflags(write=False)
        self.reg_I = np.eye(nv) * float(regularization)
        self.reg_I.setflags(write=False)
        # grasp map G = [I; [p_i - o]x] per point: constant identity blocks, skew entries per step
        n_pts = 4 * nf
        self.G_template = np.zeros((6 * nf, 3 * n_pts))
        rows, cols, comp, sign = [], [], [], []
        skew = ((0, 1, 2, -1.0), (0, 2, 1, 1.0), (1, 0, 2, 1.0), (1, 2, 0, -1.0), (2, 0, 1, -1.0),
                (2, 1, 0, 1.0))                      # [r]x entries: (row, col, component, sign)
        for k in range(nf):
            for p in range(4):
                c = 12 * k + 3 * p
                self.G_template[6 * k:6 * k + 3, c:c + 3] = np.eye(3)
                for r_, c_, x_, s_ in skew:
                    rows.append(6 * k + 3 + r_)
                    cols.append(c + c_)
                    comp.append(3 * (4 * k + p) + x_)
                    sign.append(s_)
        self._g_flat = np.array(rows, dtype=int) * (3 * n_pts) + np.array(cols, dtype=int)
        self._g_comp, self._g_sign = np.array(comp, dtype=int), np.array(sign)
        # the task stack: rows laid out once, the posture's constant rows written on a weight change
        self.tasks = tuple(tasks)
        dims = [len(t.v_index) if t.kind == "posture" else 3 for t in self.tasks]
        k = sum(dims)
        self.A, self.b = np.zeros((k, nv)), np.zeros(k)
        ends = np.cumsum(dims).tolist()
        starts = [0] + ends[:-1]
        self._views = [(self.A[a:e], self.b[a:e]) for a, e in zip(starts, ends)]
        self._posture: list[tuple | None] = []
        for t, (A_t, _) in zip(self.tasks, self._views):
            if t.kind == "posture":
                J = np.zeros((len(t.v_index), nv))
                J[np.arange(len(t.v_index)), t.v_index] = 1.0
                self._posture.append((J, _as_slice(t.q_index), _as_slice(t.v_index)))
            else:
                self._posture.append(None)
        self._written: list[float | None] = [None] * len(self.tasks)
        # [A N | A qdd_p] by blocks: runs of ordinary tasks (one product), posture (rows of N)
        self._ANb = np.empty((k, nv + 1))
        runs: list[list] = []          # [first row, end row, posture selection or None, task]
        for i, (first, end, post) in enumerate(zip(starts, ends, self._posture)):
            if post is None and runs and runs[-1][2] is None:
                runs[-1][1] = end
            else:
                runs.append([first, end, None if post is None else post[2], i])
        self._blocks = [(self._ANb[a:e], self.A[a:e] if sel is None else sel, sel is not None, i)
                        for a, e, sel, i in runs]
        self.errors: list[np.ndarray] = [np.zeros(d) for d in dims]
        self.augmented = np.zeros((nv, nv + 1), order="F")
        # the exact QP's constant part
        self.qp = friction is not None and nf > 0
        if friction is not None and nf > 0:
            reached = np.asarray(reached, dtype=bool)
            tau_limit = np.asarray(tau_limit, dtype=float)
            finite = np.isfinite(tau_limit)
            rows_t = np.flatnonzero(finite & reached)
            unreached = np.flatnonzero(finite & ~reached)
            self.lim_rows, self.lim_unreached = tau_limit[rows_t], tau_limit[unreached]
            self.rows_t, self.unreached = _as_slice(rows_t), _as_slice(unreached)
            self._unreached_idx = unreached
            self.n_unreached = len(unreached)
            self.reached = (None if np.array_equal(rows_t, np.flatnonzero(reached))
                            else _as_slice(np.flatnonzero(reached)))
            self.n_eq = nv - len(np.arange(nv)[actuated_v])
            self.n3 = friction.shape[1]
            nfr = friction.shape[0]
            m = self.n_eq + nfr + len(rows_t)
            fr, tq = slice(self.n_eq, self.n_eq + nfr), slice(self.n_eq + nfr, m)
            self.C = np.empty((m, self.n3))
            self.C[fr] = friction
            self.lower = np.full(m, -np.inf)
            self.upper = np.empty(m)
            self.sense = np.zeros(m, dtype=np.intc)
            self.sense[:self.n_eq] = _EQUALITY
            ne = self.n_eq
            self._qp_views = (self.C[:ne], self.lower[:ne], self.upper[:ne], self.upper[fr],
                              self.C[tq], self.lower[tq], self.upper[tq])
            self.eps_I: dict[float, np.ndarray] = {}

    # -- stage 1 ------------------------------------------------------------------------------
    def kinematics(self, q: np.ndarray, v: np.ndarray) -> None:
        """One Pinocchio pass at ``(q, v)`` and the contact kinematics (attributes above)."""
        model, data = self.model, self.data
        self.q, self.v = q, v
        pin.computeAllTerms(model, data, q, v)
        np.take(data.M.ravel(order="F"), self._mirror, out=self.M.reshape(-1))
        self.com, self.com_velocity = data.com[0].copy(), data.vcom[0].copy()
        pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False)
        self.com_drift = data.acom[0].copy()
        self.g = data.g
        if self.damping_v is None:
            self.h = data.nle
        else:
            h = np.multiply(self.damping_v, v)      # D qdot on the actuated rows
            h += data.nle
            self.h = h
        self._frames: dict[int, tuple] = {}
        nf = self.nf
        if nf == 0:
            self.Jc, self.Jc_dot_v = np.zeros((0, self.nv)), np.zeros(0)
            self.foot_positions, self.points = np.zeros((0, 3)), np.zeros((0, 3))
            self.grasp, self.foot_rotations = self.G_template.copy(), np.zeros((0, 3, 3))
            return
        place, jac = pin.updateFramePlacement, pin.getFrameJacobian
        acc = pin.getFrameClassicalAcceleration
        if nf == 2:
            f0, f1 = self.frame_ids
            H = np.array((place(model, data, f0).homogeneous, place(model, data, f1).homogeneous))
            self.Jc = np.concatenate((jac(model, data, f0, _LWA), jac(model, data, f1, _LWA)))
            a0, a1 = acc(model, data, f0, _LWA), acc(model, data, f1, _LWA)
            self.Jc_dot_v = np.concatenate((a0.vector, a1.vector))
        else:
            fids = self.frame_ids
            H = np.array([place(model, data, f).homogeneous for f in fids])
            self.Jc = np.concatenate([jac(model, data, f, _LWA) for f in fids])
            self.Jc_dot_v = np.concatenate([acc(model, data, f, _LWA).vector for f in fids])
        self.foot_positions = pos = H[:, 0:3, 3]
        self.foot_rotations = rot = H[:, 0:3, 0:3]
        rel = np.matmul(self.points_in_foot, rot.transpose(0, 2, 1))    # (nf, 4, 3) world axes
        G = self.G_template.copy()
        vals = np.take(rel, self._g_comp)
        vals *= self._g_sign
        G.put(self._g_flat, vals)
        self.grasp = G
        self.points = (rel + pos[:, None, :]).reshape(-1, 3)

    def frame(self, frame_id: int) -> tuple[np.ndarray, ...]:
        """``(position (3,), rotation (3, 3), jacobian (6, nv), drift (6,), velocity (6,))`` of a
        frame at the last :meth:`kinematics` (LOCAL_WORLD_ALIGNED, as
        ``DynamicsSnapshot.frame``)."""
        fk = self._frames.get(frame_id)
        if fk is None:
            model, data = self.model, self.data
            H = pin.updateFramePlacement(model, data, frame_id).homogeneous
            J = pin.getFrameJacobian(model, data, frame_id, _LWA)
            drift = pin.getFrameClassicalAcceleration(model, data, frame_id, _LWA).vector.copy()
            fk = self._frames[frame_id] = (H[0:3, 3], H[0:3, 0:3], J, drift, J @ self.v)
        return fk

    # -- stage 2 ------------------------------------------------------------------------------
    def accelerations(self, targets: list[tuple]) -> None:
        """The projection, the task stack and ``qdd*`` (attributes above). ``targets``, one per
        task: ``(kp, kd, weight, target, target_velocity)`` (``target_velocity`` ``None`` for the
        orientation and posture tasks; the orientation's target is a rotation matrix).

        Raises:
            KernelError: a factorisation failed (``projection`` says whether it was the
                projection's).
        """
        nv, aug = self.nv, self.augmented
        Nc, particular = aug[:, :nv], aug[:, nv]
        if self.nf == 0:
            if self.W_factor is None:
                _posv(self.M, np.zeros(nv), "M")               # M must be SPD all the same
            Nc[...] = self.I
            particular[...] = 0.0
            self.Jc_pinv = np.zeros((nv, 0))
        else:
            Jc = self.Jc
            if self.W_factor is None:
                Winv_JcT = _posv(self.M, Jc.T, "M")
            else:
                Winv_JcT, info = dpotrs(self.W_factor, Jc.T, lower=1)
                if info != 0:
                    raise KernelError(f"dpotrs failed (info={info})", True)
            JWJ = Jc @ Winv_JcT
            X = _posv(JWJ, Winv_JcT.T, _JWJ, 1e-13)
            Jc_pinv = self.Jc_pinv = X.T
            np.subtract(self.I, Jc_pinv @ Jc, out=Nc)
            np.negative(Jc_pinv @ self.Jc_dot_v, out=particular)
        self.Nc, self.particular = Nc, particular
        # the task rows, sqrt(w) J and sqrt(w) (kp e + kd (xdot_ref - J v) - Jdot v)
        q, v = self.q, self.v
        errors, written = self.errors, self._written
        for i, (spec, (A, b), post, tg) in enumerate(zip(self.tasks, self._views, self._posture,
                                                        targets)):
            kp, kd, w, target, target_vel = tg
            sw = math.sqrt(w)
            kind = spec.kind
            if kind == "posture":
                J, qsel, vsel = post  # type: ignore[misc]
                e = target - q[qsel]
                if written[i] != w:
                    np.multiply(J, sw, out=A)
                    written[i] = w
                np.multiply(kp * e + kd * (0.0 - v[vsel]), sw, out=b)
                errors[i] = e
                continue
            if kind == "com":
                e = target - self.com
                np.multiply(self.data.Jcom, sw, out=A)
                vel, drift = self.com_velocity.tolist(), self.com_drift.tolist()
            else:
                pos, rot, J, drift6, vel6 = self.frame(spec.frame_id)
                if kind == "position":
                    e = target - pos
                    np.multiply(J[0:3], sw, out=A)
                    vel, drift = vel6.tolist()[0:3], drift6.tolist()[0:3]
                else:
                    e = pin.log3(target @ rot.T)
                    np.multiply(J[3:6], sw, out=A)
                    vel, drift = vel6.tolist()[3:6], drift6.tolist()[3:6]
            e0, e1, e2 = e.tolist()
            r0, r1, r2 = (0.0, 0.0, 0.0) if target_vel is None else target_vel.tolist()
            b[0] = (kp * e0 + kd * (r0 - vel[0]) - drift[0]) * sw
            b[1] = (kp * e1 + kd * (r1 - vel[1]) - drift[1]) * sw
            b[2] = (kp * e2 + kd * (r2 - vel[2]) - drift[2]) * sw
            errors[i] = e
        if self.nullspace:
            ANb = self._ANb
            for out, rows, is_sel, k in self._blocks:
                if is_sel:   # sqrt(w) S [N | qdd_p] = sqrt(w) [N | qdd_p][selection]
                    np.multiply(aug[rows], math.sqrt(targets[k][2]), out=out)
                else:
                    np.matmul(rows, aug, out=out)
            col = ANb[:, nv]
            np.subtract(self.b, col, out=col)              # b - A qdd_p
            HrT = ANb.T @ ANb[:, :nv]     # [(A N)^T (A N); (b - A qdd_p)^T (A N)]
            H = HrT[:nv]
            H += self.reg_I
            if not math.isfinite(_sum(HrT, axis=None)):
                raise KernelError("non-finite task Jacobian or acceleration in the task stack",
                                  False)
            z = _posv(H.T, HrT[nv], "task-stack normal matrix", projection=False)
            qdd_des = aug[:, nv] + aug[:, :nv] @ z
        else:
            A, b = self.A, self.b
            H = A.T @ A
            H += self.reg_I
            rhs = A.T @ b
            if not math.isfinite(_sum(H, axis=None) + _sum(rhs)):
                raise KernelError("non-finite task Jacobian or acceleration in the task stack",
                                  False)
            qdd_des = _posv(H, rhs, "task-stack normal matrix", projection=False)
        self.qdd_des = qdd_des
        self.qdd_star = Nc @ qdd_des + particular

    # -- stage 3 ------------------------------------------------------------------------------
    def solve_qp(self, friction_rhs: np.ndarray, force_weight: float,
                 force_limits: tuple[np.ndarray, np.ndarray] | None = None) -> tuple:
        """The exact QP (``qdd = qdd*``) by DAQP: ``(found, f (3 n_points,), tau (n_joints,),
        status)``; ``f``, ``tau`` NaN when not found."""
        npf = self.n3
        A_f = self.Jc.T @ self.grasp
        Aa, Au = A_f[self.act], A_f[self.unact]
        b = self.M @ self.qdd_star
        b += self.h
        ba, bu = b[self.act], b[self.unact]
        C, lower, upper, sense = self.C, self.lower, self.upper, self.sense
        C_eq, lower_eq, upper_eq, upper_fr, Ar, lower_tq, upper_tq = self._qp_views
        C_eq[...] = Au
        lower_eq[...] = bu
        upper_eq[...] = bu
        upper_fr[...] = friction_rhs
        Ar[...] = Aa[self.rows_t]          # |ba - Aa f| <= lim: ba - lim <= Aa f <= ba + lim
        bar = ba[self.rows_t]
        np.subtract(bar, self.lim_rows, out=lower_tq)
        np.add(bar, self.lim_rows, out=upper_tq)
        if self.reached is not None:       # a reached joint without torque limit
            Ar, bar = Aa[self.reached], ba[self.reached]
        eps_I = self.eps_I.get(force_weight)
        if eps_I is None:
            eps_I = self.eps_I[force_weight] = np.eye(npf) * force_weight
        P = Ar.T @ Ar
        P += eps_I
        qv = -Ar.T @ bar
        if force_limits is not None:
            G_f, h_f = force_limits
            C = np.vstack([C, G_f])
            lower = np.concatenate([lower, np.full(len(h_f), -np.inf)])
            upper = np.concatenate([upper, h_f])
            sense = np.concatenate([sense, np.zeros(len(h_f), dtype=np.intc)])
        if self.n_unreached:
            over = np.abs(ba[self.unreached]) > self.lim_unreached
            if np.logical_or.reduce(over):
                rows_v = np.arange(self.nv)[self.act][self._unreached_idx[over]]
                return (False, None, None,
                        f"torque limit exceeded on joints (v-rows) {rows_v.tolist()}")
        try:
            x, _, exitflag, _ = daqp.solve(P, qv, C, upper, lower, sense)
        except Exception as exc:  # noqa: BLE001  a solver may raise on a degenerate problem
            return False, None, None, f"daqp error: {exc}"
        if not (exitflag > 0 and math.isfinite(_sum(x))):
            return False, None, None, "daqp: no solution (infeasible)"
        return True, x, ba - Aa @ x, "ok"                 # tau = (M qdd* + h - A_f f)_a
