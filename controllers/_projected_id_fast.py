"""Speed kernel of :mod:`wbsim.controllers.contact_projected_id`: one step of the
contact-projected inverse dynamics of one contact set on preallocated arrays.

The same quantities as the readable path (``compute_snapshot``, ``contact_kinematics``,
``contact_projection``, the tasks' rows and ``build_task_stack`` / ``solve_task_stack``,
``build_contact_qp`` for the exact QP; docs/controllers.md, "The projected-ID kernel"), equal to
it up to rounding, with few Python calls: ``M`` is read from the upper triangle Pinocchio fills
(LAPACK ``dposv`` / BLAS ``dsymv`` with ``uplo='U'``; mirrored only when asked for); the grasp
map and the sole points are one product of the feet's placements with a constant matrix;
``[N_c | qdd_p]`` is one product with ``[J_c | Jcdot_c v]``; the stack in the null space
multiplies ``[N_c | qdd_p]`` at once, reads the posture rows of it, and its solution is already
contact-consistent (no second projection); the QP's rows are laid out once per contact set and
DAQP is called directly on its two-sided form. It works on plain arrays and Pinocchio's model,
owns its Pinocchio data and knows nothing of the controller; ``tests/test_contact_projected_id.py``
checks it against the readable path.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import dsymv
from scipy.linalg.lapack import dposv, dpotrs

try:
    import daqp
except ImportError:  # pragma: no cover - qpsolvers then lists no "daqp" either
    daqp = None

__all__ = ["KernelError", "ProjectedIDKernel", "TaskSpec"]

_LWA = pin.LOCAL_WORLD_ALIGNED
_ACC = pin.KinematicLevel.ACCELERATION
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
    ``"posture"``, ``"momentum"``: the centroidal angular momentum), its Pinocchio frame (``-1``
    if none) and its ``q`` / ``v`` indices (posture)."""

    kind: str
    frame_id: int = -1
    q_index: Any = None
    v_index: Any = None


def _as_slice(idx):
    idx = np.asarray(idx, dtype=int)
    if idx.ndim == 1 and idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def _check(info: int, what: str, projection: bool) -> None:
    if info != 0:
        raise KernelError(
            f"{what} is not symmetric positive definite (dpotrf info={info})", projection
        )


def _placement_map(points_in_foot: np.ndarray) -> np.ndarray:
    """``B (16 n_feet, 72 n_feet^2 + 3 n_points)``: the grasp map ``G`` (flattened,
    ``(6 n_feet, 3 n_points)``) followed by the sole points ``(n_points, 3)`` (world, m) are
    ``H.ravel() @ B``, ``H (n_feet, 4, 4)`` the feet's homogeneous placements: each point's world
    offset ``r = R p^foot`` is linear in ``R``, ``G = [I; [r]x]`` and ``p = o + r``; the identity
    blocks of ``G`` come from ``H[0][3, 3] = 1``. Each entry of the product is one non-zero term
    (``G``) or the three of ``R p^foot`` plus ``o`` (the points)."""
    nf = len(points_in_foot)
    n_pts = 4 * nf
    ng = 6 * nf * 3 * n_pts
    B = np.zeros((16 * nf, ng + 3 * n_pts))
    if nf == 0:
        return B
    offset = B[15, :ng]  # times H[0][3, 3] = 1
    skew = (
        (0, 1, 2, -1.0),
        (0, 2, 1, 1.0),
        (1, 0, 2, 1.0),
        (1, 2, 0, -1.0),
        (2, 0, 1, -1.0),
        (2, 1, 0, 1.0),
    )  # [r]x entries: (row, col, component, sign)
    for k in range(nf):
        for p in range(4):
            c = 12 * k + 3 * p
            pt = 4 * k + p
            for i in range(3):
                offset[(6 * k + i) * 3 * n_pts + c + i] = 1.0
                B[16 * k + 4 * i + 3, ng + 3 * pt + i] = 1.0  # + o_i
                for j in range(3):  # r_i = sum_j R_ij p_j
                    B[16 * k + 4 * i + j, ng + 3 * pt + i] = points_in_foot[k, p, j]
            for r_, c_, x_, s_ in skew:
                col = (6 * k + 3 + r_) * 3 * n_pts + c + c_
                for j in range(3):
                    B[16 * k + 4 * x_ + j, col] = s_ * points_in_foot[k, p, j]
    return B


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

    After :meth:`kinematics`: ``M`` ``(nv, nv)`` (mirrored on first access), ``h`` (damping
    included), ``g``, ``Jc`` ``(6 n_feet, nv)``, ``Jc_dot_v``, ``grasp``, ``foot_rotations``,
    ``foot_positions``, ``points`` ``(n_points, 3)``, ``data``. After :meth:`accelerations`:
    ``Jc_pinv``, ``Nc``, ``particular``, ``qdd_des``, ``qdd_star``, ``error_norms`` (each task's
    error norm). Arrays are the kernel's own buffers, rewritten at the next step.
    """

    def __init__(
        self,
        model: pin.Model,
        foot_frame_ids: tuple[int, ...],
        points_in_foot: np.ndarray,
        tasks: tuple[TaskSpec, ...],
        actuated_v: slice | np.ndarray,
        W_factor: np.ndarray | None,
        nullspace: bool,
        regularization: float,
        damping_v: np.ndarray | None,
        friction: np.ndarray | None,
        reached: np.ndarray,
        tau_limit: np.ndarray,
    ):
        self.model, self.data = model, model.createData()
        nv = self.nv = model.nv
        self.frame_ids = tuple(int(f) for f in foot_frame_ids)
        nf = self.nf = len(self.frame_ids)
        nc, n_pts = 6 * nf, 4 * nf
        self.points_in_foot = np.asarray(points_in_foot, dtype=float).reshape(nf, 4, 3)
        self.act = actuated_v
        mask = np.ones(nv, dtype=bool)
        mask[actuated_v] = False
        self.unact = _as_slice(np.flatnonzero(mask))
        self.W_factor, self.nullspace = W_factor, bool(nullspace)
        self.damping_v = damping_v
        self._M = np.empty((nv, nv))
        self._M_fresh = False
        row, col = np.divmod(np.arange(nv * nv), nv)  # M from its upper triangle (column-major)
        self._mirror = np.maximum(row, col) * nv + np.minimum(row, col)
        self.reg_I = np.eye(nv) * float(regularization)
        self.reg_I.setflags(write=False)
        # [J_c | Jcdot_c v]; [I | 0] - J_c^# [J_c | Jcdot_c v] = [N_c | qdd_p]
        self.JcA = np.zeros((nc, nv + 1))
        self.Jc, self.Jc_dot_v = self.JcA[:, :nv], self.JcA[:, nv]
        self._E = np.eye(nv, nv + 1)
        self._E.setflags(write=False)
        self.augmented = np.zeros((nv, nv + 1))
        self.Nc, self.particular = self.augmented[:, :nv], self.augmented[:, nv]
        self.Jc_pinv = np.zeros((nv, 0))
        # the feet's placements: the top 3 rows of each homogeneous matrix, then a constant 1
        # (the bottom rows of H are constant: B's rows of them, but the 1 of H[0], are dropped)
        self._hvec = np.zeros(12 * nf + 1)
        self._hvec[-1] = 1.0
        self._hviews = tuple(self._hvec[12 * k : 12 * k + 12].reshape(3, 4) for k in range(nf))
        H = self._hvec[: 12 * nf].reshape(nf, 3, 4)
        self.foot_positions, self.foot_rotations = H[:, :, 3], H[:, :, 0:3]
        keep = [16 * k + r for k in range(nf) for r in range(12)] + ([15] if nf else [])
        self._placement = _placement_map(self.points_in_foot)[keep]
        self._ng = nc * 3 * n_pts
        self._frames: dict[int, tuple] = {}
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
        # the momentum task's own data (computeCentroidalMapTimeVariation; ``data`` is left alone)
        self._centroidal: Any = (
            model.createData() if any(t.kind == "momentum" for t in self.tasks) else None
        )
        # [A N | b - A qdd_p] by blocks: runs of ordinary tasks (one product), posture (rows of N)
        self._ANb = np.empty((k, nv + 1))
        runs: list[list] = []  # [first row, end row, posture selection or None, task]
        for i, (first, end, post) in enumerate(zip(starts, ends, self._posture)):
            if post is None and runs and runs[-1][2] is None:
                runs[-1][1] = end
            else:
                runs.append([first, end, None if post is None else post[2], i])
        self._blocks = [
            (self._ANb[a:e], self.A[a:e] if sel is None else sel, sel is not None, i)
            for a, e, sel, i in runs
        ]
        self.error_norms: list[float] = [0.0] * len(self.tasks)
        self._ones_H = np.ones((nv + 1) * nv)  # finiteness tests as one dot product
        self.qp = friction is not None and nf > 0
        if self.qp:
            self._qp_layout(
                np.asarray(friction, dtype=float),
                np.asarray(reached, dtype=bool),
                np.asarray(tau_limit, dtype=float),
            )

    def _qp_layout(self, friction: np.ndarray, reached: np.ndarray, tau_limit: np.ndarray) -> None:
        """The exact QP's rows in DAQP's two-sided form, ``lower <= C f <= upper``: the
        unactuated rows of the dynamics (equalities), the torque limits of the joints a force
        reaches (``|b_a - A_a f| <= lim``), the friction cone. The first two groups are rows
        ``rows_v`` of ``b = M qdd* + h`` and of ``J_c^T G`` (a slice when contiguous: then
        ``C``'s first rows are one product)."""
        nv = self.nv
        act_v = np.arange(nv)[self.act]
        unact_v = np.arange(nv)[self.unact]
        finite = np.isfinite(tau_limit)
        rows_t = np.flatnonzero(finite & reached)
        unreached = np.flatnonzero(finite & ~reached)
        self.n_eq = len(unact_v)
        self.n_t = len(rows_t)
        self.lim_unreached = tau_limit[unreached]
        self.unreached_v = _as_slice(act_v[unreached]) if len(unreached) else None
        self.unreached_idx = unreached
        # the rows of the cost: the reached joints (their torques depend on f)
        cost_v = act_v[np.flatnonzero(reached)]
        self.cost_in_C = np.array_equal(cost_v, act_v[rows_t])
        self.cost_v = _as_slice(cost_v)
        self.cost_pos = _as_slice(np.flatnonzero(reached))
        self.rows_t_v = _as_slice(act_v[rows_t])
        self.rows_v = _as_slice(np.r_[unact_v, act_v[rows_t]])
        ne, nt = self.n_eq, self.n_t
        self._lim_lo = np.r_[np.zeros(ne), tau_limit[rows_t]]  # b -+ lim (0: the equalities)
        self.n3 = friction.shape[1]
        m = ne + nt + friction.shape[0]
        self.C = np.empty((m, self.n3))
        self.C[ne + nt :] = friction
        self.lower = np.full(m, -np.inf)
        self.upper = np.empty(m)
        self.sense = np.zeros(m, dtype=np.intc)
        self.sense[:ne] = _EQUALITY
        self._head = (
            self.C[: ne + nt],
            self.lower[: ne + nt],
            self.upper[: ne + nt],
            self.upper[ne + nt :],
            self.C[ne : ne + nt],
        )
        self.eps_I: dict[float, np.ndarray] = {}
        self._ones_f = np.ones(self.n3)

    # -- stage 1 ------------------------------------------------------------------------------
    def kinematics(self, q: np.ndarray, v: np.ndarray) -> None:
        """One Pinocchio pass at ``(q, v)`` and the contact kinematics (attributes above)."""
        model, data = self.model, self.data
        self.q, self.v = q, v
        pin.computeAllTerms(model, data, q, v)
        self._M_fresh = False
        self.com, self.com_velocity = data.com[0].tolist(), data.vcom[0].tolist()
        pin.centerOfMass(model, data, _ACC, False)
        self.com_drift = data.acom[0].tolist()
        if self.damping_v is None:
            self.h = data.nle
        else:
            h = np.multiply(self.damping_v, v)  # D qdot on the actuated rows
            h += data.nle
            self.h = h
        self._frames.clear()
        nf = self.nf
        if nf == 0:
            self.points, self.grasp = np.zeros((0, 3)), np.zeros((0, 0))
            return
        place, jac = pin.updateFramePlacement, pin.getFrameJacobian
        acc = pin.getFrameClassicalAcceleration
        JcA, nv, hviews = self.JcA, self.nv, self._hviews
        for k, f in enumerate(self.frame_ids):
            hviews[k][...] = place(model, data, f).homogeneous[0:3]
            JcA[6 * k : 6 * k + 6, :nv] = jac(model, data, f, _LWA)
            JcA[6 * k : 6 * k + 6, nv] = acc(model, data, f, _LWA).vector
        y = self._hvec.dot(self._placement)  # [G (flat) | sole points (flat)]
        ng = self._ng
        self.grasp = y[:ng].reshape(6 * nf, 12 * nf)
        self.points = y[ng:].reshape(-1, 3)

    @property
    def g(self) -> np.ndarray:
        """``(nv,)`` generalised gravity of the last :meth:`kinematics` (Pinocchio's data)."""
        return self.data.g

    @property
    def M(self) -> np.ndarray:
        """``(nv, nv)`` mass matrix of the last :meth:`kinematics`, mirrored from its upper
        triangle on first access."""
        if not self._M_fresh:
            np.take(self.data.M.ravel(order="F"), self._mirror, out=self._M.reshape(-1))
            self._M_fresh = True
        return self._M

    def frame(self, frame_id: int) -> tuple[Any, ...]:
        """``(placement (pin.SE3), jacobian (6, nv), drift, velocity)`` of a frame at the last
        :meth:`kinematics` (LOCAL_WORLD_ALIGNED, as ``DynamicsSnapshot.frame``; drift and
        velocity as lists of 6 floats; a task reads the placement's translation or rotation)."""
        fk = self._frames.get(frame_id)
        if fk is None:
            model, data = self.model, self.data
            oMf = pin.updateFramePlacement(model, data, frame_id)
            J = pin.getFrameJacobian(model, data, frame_id, _LWA)
            drift = pin.getFrameClassicalAcceleration(model, data, frame_id, _LWA).vector.tolist()
            fk = self._frames[frame_id] = (oMf, J, drift, J.dot(self.v).tolist())
        return fk

    # -- stage 2 ------------------------------------------------------------------------------
    def accelerations(self, targets: list[tuple]) -> None:
        """The projection, the task stack and ``qdd*`` (attributes above). ``targets``, one per
        task: ``(kp, kd, weight, target, target_velocity, target_acceleration)``
        (``target_velocity`` and ``target_acceleration`` ``None`` for none, always for the
        orientation and posture tasks; the orientation's target is a rotation matrix; the
        momentum task: ``(0, kd, weight, None, L_ref, L'_ref)``, its law first order,
        ``L'_ref + kd (L_ref - L)``, ``L = A_G[3:6] v`` and its error ``L_ref - L``).

        Raises:
            KernelError: a factorisation failed (``projection`` says whether it was the
                projection's).
        """
        nv, aug = self.nv, self.augmented
        Mu = self.data.M  # its upper triangle is read
        if self.nf == 0:
            if self.W_factor is None:  # M must be SPD all the same
                _check(dposv(Mu, np.zeros(nv), lower=0)[2], "M", True)
            aug[...] = self._E
            self.Jc_pinv = np.zeros((nv, 0))
        else:
            Jc = self.Jc
            if self.W_factor is None:
                _, Winv_JcT, info = dposv(Mu, Jc.T, lower=0)
                _check(info, "M", True)
            else:
                Winv_JcT, info = dpotrs(self.W_factor, Jc.T, lower=1)
                if info != 0:
                    raise KernelError(f"dpotrs failed (info={info})", True)
            JWJ = Jc.dot(Winv_JcT)
            L, X, info = dposv(JWJ, Winv_JcT.T, lower=1)
            _check(info, _JWJ, True)
            d = min(L.diagonal().tolist())  # the pivot test of tasks.cholesky
            if d * d <= 1e-13 * max(JWJ.diagonal().tolist()):
                raise KernelError(
                    f"{_JWJ} is (numerically) singular: smallest Cholesky pivot {d * d:.3g}", True
                )
            Jc_pinv = self.Jc_pinv = X.T
            np.subtract(self._E, Jc_pinv.dot(self.JcA), out=aug)  # [N_c | qdd_p]
        # the task rows, sqrt(w) J and sqrt(w) (kp e + kd (xdot_ref - J v) - Jdot v)
        q, v = self.q, self.v
        norms, written = self.error_norms, self._written
        for i, (spec, (A, b), post, tg) in enumerate(
            zip(self.tasks, self._views, self._posture, targets)
        ):
            kp, kd, w, target, target_vel, target_acc = tg
            sw = math.sqrt(w)
            kind = spec.kind
            if kind == "posture":
                J, qsel, vsel = post  # type: ignore[misc]
                e = target - q[qsel]
                if written[i] != w:
                    np.multiply(J, sw, out=A)
                    written[i] = w
                np.multiply(e, kp, out=b)  # kp e + kd (0 - v), rounded alike
                b -= kd * v[vsel]
                b *= sw
                norms[i] = math.sqrt(float(e.dot(e)))
                continue
            if kind == "momentum":  # A_G[3:6] qdd + (A_G' v)[3:6] = L'_ref + kd (L_ref - L)
                cd = self._centroidal
                pin.computeCentroidalMapTimeVariation(self.model, cd, q, v)
                Ag = cd.Ag[3:6]
                np.multiply(Ag, sw, out=A)
                L0, L1, L2 = Ag.dot(v).tolist()
                m0, m1, m2 = cd.dAg[3:6].dot(v).tolist()
                r0, r1, r2 = target_vel.tolist()
                a0, a1, a2 = target_acc.tolist()
                e0, e1, e2 = r0 - L0, r1 - L1, r2 - L2
                b[0] = (a0 + kd * e0 - m0) * sw
                b[1] = (a1 + kd * e1 - m1) * sw
                b[2] = (a2 + kd * e2 - m2) * sw
                norms[i] = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
                continue
            if kind == "com":
                t0, t1, t2 = target.tolist()
                c = self.com
                e0, e1, e2 = t0 - c[0], t1 - c[1], t2 - c[2]
                np.multiply(self.data.Jcom, sw, out=A)
                vel, drift = self.com_velocity, self.com_drift
            else:
                oMf, J, drift6, vel6 = self.frame(spec.frame_id)
                if kind == "position":
                    e0, e1, e2 = (target - oMf.translation).tolist()
                    np.multiply(J[0:3], sw, out=A)
                    vel, drift = vel6[0:3], drift6[0:3]
                else:
                    e0, e1, e2 = pin.log3(target.dot(oMf.rotation.T)).tolist()
                    np.multiply(J[3:6], sw, out=A)
                    vel, drift = vel6[3:6], drift6[3:6]
            r0, r1, r2 = (0.0, 0.0, 0.0) if target_vel is None else target_vel.tolist()
            a0, a1, a2 = (0.0, 0.0, 0.0) if target_acc is None else target_acc.tolist()
            b[0] = (a0 + kp * e0 + kd * (r0 - vel[0]) - drift[0]) * sw
            b[1] = (a1 + kp * e1 + kd * (r1 - vel[1]) - drift[1]) * sw
            b[2] = (a2 + kp * e2 + kd * (r2 - vel[2]) - drift[2]) * sw
            norms[i] = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        if self.nullspace:
            # qdd = qdd_p + N z: contact-consistent by construction, so qdd* = qdd_des (the
            # projection N qdd_des + qdd_p returns it unchanged: N qdd_p = 0, N N = N)
            ANb = self._ANb
            for out, rows, is_sel, k in self._blocks:
                if is_sel:  # sqrt(w) S [N | qdd_p] = sqrt(w) [N | qdd_p][selection]
                    np.multiply(aug[rows], math.sqrt(targets[k][2]), out=out)
                else:
                    rows.dot(aug, out=out)
            col = ANb[:, nv]
            np.subtract(self.b, col, out=col)  # b - A qdd_p
            HrT = ANb.T.dot(ANb[:, :nv])  # [(A N)^T (A N); (b - A qdd_p)^T (A N)]
            H = HrT[:nv]
            H += self.reg_I
            if not math.isfinite(HrT.reshape(-1).dot(self._ones_H)):  # a NaN or inf anywhere
                raise KernelError(
                    "non-finite task Jacobian or acceleration in the task stack", False
                )
            _, z, info = dposv(H.T, HrT[nv], lower=1)
            _check(info, "task-stack normal matrix", False)
            qdd_des = self.particular + self.Nc.dot(z)
            self.qdd_des = self.qdd_star = qdd_des
        else:
            A, b = self.A, self.b
            H = A.T.dot(A)
            H += self.reg_I
            rhs = A.T.dot(b)
            if not math.isfinite(_sum(H, axis=None) + _sum(rhs)):
                raise KernelError(
                    "non-finite task Jacobian or acceleration in the task stack", False
                )
            _, qdd_des, info = dposv(H, rhs, lower=1)
            _check(info, "task-stack normal matrix", False)
            self.qdd_des = qdd_des
            self.qdd_star = self.Nc.dot(qdd_des) + self.particular

    # -- stage 3 ------------------------------------------------------------------------------
    def solve_qp(
        self,
        friction_rhs: np.ndarray,
        force_weight: float,
        force_limits: tuple[np.ndarray, np.ndarray] | None = None,
        force_reference: np.ndarray | None = None,
    ) -> tuple:
        """The exact QP (``qdd = qdd*``) by DAQP: ``(found, f (3 n_points,), tau (n_joints,),
        status)``; ``f``, ``tau`` NaN when not found. ``force_reference``: ``f_ref (3 n_points,)``
        of the cost ``eps ||f - f_ref||^2`` (``None``: 0)."""
        C, lower, upper, sense = self.C, self.lower, self.upper, self.sense
        C_head, lower_head, upper_head, upper_fr, Ar = self._head
        b = dsymv(1.0, self.data.M, self.qdd_star, 1.0, self.h, lower=0)  # M qdd* + h
        Jc, rows = self.Jc, self.rows_v
        Jc[:, rows].T.dot(self.grasp, out=C_head)  # (J_c^T G) rows: unactuated, limited
        bh = b[rows]
        np.subtract(bh, self._lim_lo, out=lower_head)  # equalities: b_u; limits: b_a -+ lim
        np.add(bh, self._lim_lo, out=upper_head)
        upper_fr[...] = friction_rhs
        if self.cost_in_C:
            Ac, bc = Ar, b[self.rows_t_v]
        else:  # a reached joint without torque limit
            Ac, bc = Jc[:, self.cost_v].T.dot(self.grasp), b[self.cost_v]
        eps_I = self.eps_I.get(force_weight)
        if eps_I is None:
            eps_I = self.eps_I[force_weight] = np.eye(self.n3) * force_weight
        P = Ac.T.dot(Ac)
        P += eps_I
        qv = (-bc).dot(Ac)  # -Ac^T bc
        if force_reference is not None:
            qv -= force_weight * force_reference
        if force_limits is not None:
            G_f, h_f = force_limits
            C = np.vstack([C, G_f])
            lower = np.concatenate([lower, np.full(len(h_f), -np.inf)])
            upper = np.concatenate([upper, h_f])
            sense = np.concatenate([sense, np.zeros(len(h_f), dtype=np.intc)])
        unreached = self.unreached_v
        if unreached is not None and (over := np.abs(b[unreached]) > self.lim_unreached).any():
            rows_v = np.arange(self.nv)[self.act][self.unreached_idx[over]]
            return (
                False,
                None,
                None,
                f"torque limit exceeded on joints (v-rows) {rows_v.tolist()}",
            )
        try:
            x, _, exitflag, _ = daqp.solve(P, qv, C, upper, lower, sense)
        except Exception as exc:  # noqa: BLE001  a solver may raise on a degenerate problem
            return False, None, None, f"daqp error: {exc}"
        if not (exitflag > 0 and math.isfinite(x.dot(self._ones_f))):  # a NaN or inf in x
            return False, None, None, "daqp: no solution (infeasible)"
        # tau = (M qdd* + h - J_c^T G f)_a; the rows no force reaches are b_a themselves
        tau = b[self.act]
        tau[self.cost_pos] -= Ac.dot(x)
        return True, x, tau, "ok"
