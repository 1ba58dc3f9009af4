"""Speed kernel of :mod:`wbsim.controllers.gravity_qp`: the statics QP of one support set on
preallocated arrays, DAQP called directly.

The same QP as :func:`~wbsim.controllers.gravity_qp.build_statics_qp` (points model, with or
without torque limits; docs/controllers.md, "The statics kernel"), written for few Python calls: the unknowns are
the point forces in the sole frame (the floor-frame cone rows times each foot's rotation, one
``(k, 3)`` product per foot) and the torques of the joints the contacts reach (every other joint has
``tau = g``), so the Hessian ``diag(eps, 1)`` is constant; ``g(q) = -M J_com^T g_0`` and every Jacobian come from one
``pinocchio.jacobianCenterOfMass`` pass; the point Jacobians are transported from one foot
Jacobian each. It owns its Pinocchio data and knows nothing of the controller that uses it;
``tests/test_gravity_qp.py`` checks it against the readable path.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pinocchio as pin

try:
    import daqp
except ImportError:  # pragma: no cover - qpsolvers then lists no "daqp" either
    daqp = None

__all__ = ["StaticsKernel", "kernel_applies"]

#: DAQP's "no bound" and its equality constraint type.
_NO_LOWER = -1e30
_EQUALITY = 5


def _point_offsets(model: pin.Model, foot) -> np.ndarray | None:
    """``(n_points, 3)`` sole points in the foot frame if every point frame rides on the foot
    frame's joint with the foot frame's orientation, the foot frame's orientation is its joint's,
    else ``None`` (the kernel does not apply)."""
    frame = model.frames[int(foot.pin_frame_id)]
    if np.abs(frame.placement.rotation - np.eye(3)).max() > 0.0:
        return None
    out = []
    for pid in foot.pin_point_frame_ids:
        point = model.frames[int(pid)]
        rel = frame.placement.actInv(point.placement)
        if point.parentJoint != frame.parentJoint or np.abs(rel.rotation - np.eye(3)).max() > 1e-12:
            return None
        out.append(rel.translation.copy())
    return np.array(out)


def kernel_applies(model: pin.Model, feet) -> bool:
    """Whether :class:`StaticsKernel` can serve every support set of ``feet`` (``robot.feet``
    values): DAQP installed, a free-flyer root, and each foot's points transportable from its
    frame (:func:`_point_offsets`), the same number on every foot."""
    if daqp is None or model.njoints < 2 or model.joints[1].shortname() != "JointModelFreeFlyer":
        return False
    offsets = [_point_offsets(model, f) for f in feet]
    sizes = {len(o) if o is not None else -1 for o in offsets}
    return bool(offsets) and -1 not in sizes and len(sizes) == 1


class StaticsKernel:
    """The statics QP of one support set (points model), ``x = [f_sole (m,); tau_L (nl,)]``:
    minimise ``1/2 x^T diag(eps, 1) x`` subject to ``C R f_sole <= h`` (cone rows ``C`` in the
    floor's frame, the world's; ``R`` the foot's orientation), ``|tau_L| <= effort_L`` and
    ``[(J^T)_u f; tau_L + (J^T)_L f] = [g_u; g_L]`` (base rows and the ``nl`` joints the contacts
    reach, Pinocchio's velocity order).

    Args:
        model: the Pinocchio model (free-flyer root).
        foot_frame_ids: Pinocchio frame id of each support foot.
        point_offsets: ``(n_feet, n_points, 3)`` sole points in their foot frame, m.
        cone: ``(n_feet, k, 3)`` cone rows of a point of each foot, world frame; cone_rhs:
            ``(k,)``.
        eps: weight of ``||f||^2`` against ``||tau||^2``.
        actuated_v: ``(n_joints,)`` Pinocchio velocity index of each joint, ``joint_names``
            order.
        effort: ``(n_joints,)`` torque limits (N·m, ``inf``: none), ``joint_names`` order, or
            ``None`` for no limits. Joints no contact reaches have ``tau = g`` whatever the limit.

    After :meth:`solve`: ``tau`` ``(n_joints,)`` (N·m, fresh), ``forces`` ``(n_points, 3)`` world
    frame (N, fresh, read-only), ``sole_forces`` ``(n_points, 3)`` sole frame, ``slack``
    ``(n_points k,)`` ``G f - h`` (a view, valid until the next call), ``residual`` (N·m),
    ``solve_time`` (s).
    """

    def __init__(
        self,
        model: pin.Model,
        foot_frame_ids: tuple[int, ...],
        point_offsets: np.ndarray,
        cone: np.ndarray,
        cone_rhs: np.ndarray,
        eps: float,
        actuated_v: np.ndarray,
        effort: np.ndarray | None = None,
    ):
        self.model = model
        self.data = data = model.createData()
        nf, npf = len(foot_frame_ids), point_offsets.shape[1]
        nc = nf * npf
        kr = cone.shape[1]
        self.m = m = 3 * nc
        self.nin = nin = nc * kr
        nv = model.nv
        self.foot_frame_ids = tuple(int(i) for i in foot_frame_ids)
        joints = [int(model.frames[i].parentJoint) for i in self.foot_frame_ids]
        # the joints the contact forces reach: those on the chains from the base to the soles
        reached = sorted(
            {
                v
                for j in joints
                for i in model.supports[j]
                if i > 1
                for v in range(model.joints[i].idx_v, model.joints[i].idx_v + model.joints[i].nv)
            }
        )
        nl = len(reached)
        self.cols = np.array(list(range(6)) + reached, dtype=np.intp)  # base + reached v-rows
        self.contiguous = contiguous = np.array_equal(self.cols, np.arange(6 + nl))
        actuated_v = np.asarray(actuated_v, dtype=np.intp)
        self.vidx = actuated_v
        # the joints (joint_names order) whose torques are unknowns, in the order of cols[6:]
        pos = {int(v): i for i, v in enumerate(actuated_v)}
        self.reached_joints = np.array([pos[v] for v in reached], dtype=np.intp)
        # J = T J_feet: rigid-body transport of the foot (LOCAL) Jacobians to its points
        self.J_feet = np.zeros((6 * nf, nv))
        T = np.zeros((m, 6 * nf))
        for k in range(nf):
            for i, p in enumerate(point_offsets[k]):
                c = 3 * (npf * k + i)
                T[c : c + 3, 6 * k : 6 * k + 3] = np.eye(3)
                T[c : c + 3, 6 * k + 3 : 6 * k + 6] = -pin.skew(p)
        self.TT = np.ascontiguousarray(T.T)
        if contiguous:  # J_feet^T of the base and reached columns: a view, no copy
            self.J_sel = None
            self.JfT = self.J_feet[:, : 6 + nl].T
        else:
            self.J_sel = np.empty((6 * nf, 6 + nl))
            self.JfT = self.J_sel.T
        # torque limits of the reached joints with a finite one: rows [0 I] tau_L in [-lim, lim]
        lim = (
            np.full(nl, np.inf)
            if effort is None
            else np.asarray(effort, dtype=float)[self.reached_joints]
        )
        limited = np.flatnonzero(np.isfinite(lim))
        nt = limited.size
        ne = nin + nt  # the first equality row
        rows = ne + 6 + nl
        self.A = np.zeros((rows, m + nl))
        self.A[nin + np.arange(nt), m + limited] = 1.0
        # the cone block of every point of foot k, a strided view of A: C_k R_k is written into
        # it (broadcast over the foot's points) at each call
        row, col = self.A.strides
        cone_blocks = np.lib.stride_tricks.as_strided(
            self.A,
            shape=(nf, npf, kr, 3),
            strides=(npf * (kr * row + 3 * col), kr * row + 3 * col, row, col),
            writeable=True,
        )
        self.cone = np.array(cone, dtype=float)
        self.A[ne + 6 :, m:] = np.eye(nl)
        self.JT = self.A[ne:, :m]  # (J^T) rows base + reached (a view)
        self.H = np.diag(np.concatenate([np.full(m, eps), np.ones(nl)]))
        self.c = np.zeros(m + nl)
        self.bu = np.zeros(rows)
        self.bu[:nin] = np.tile(cone_rhs, nc)
        self.h = self.bu[:nin].copy()
        self.h_zero = not np.any(self.h)
        self.bu[nin:ne] = lim[limited]
        self.g_eq = self.bu[ne:]  # [g_u; g_L]
        self.bl = np.full(rows, _NO_LOWER)
        self.bl[nin:ne] = -lim[limited]
        self.sense = np.zeros(rows, dtype=np.intc)
        self.sense[ne:] = _EQUALITY
        self.gq = np.zeros(nv)  # g(q)
        self.y = np.zeros(rows)  # A x
        self.y_in, self.y_eq = self.y[:nin], self.y[ne:]
        # -M g_0 (total mass times the model's gravity): g(q) = J_com^T of it
        self.mg = -pin.computeTotalMass(model) * np.array(model.gravity.linear)
        # world forces f = W f_sole, W block-diagonal with R_foot per point; R_foot as views of
        # data.oMi[j].rotation (Pinocchio's joint placements never move), refreshed each call
        self.W = np.zeros((m, m))
        row, col = self.W.strides
        blocks = np.lib.stride_tricks.as_strided(
            self.W,
            shape=(nf, npf, 3, 3),
            strides=(npf * 3 * (row + col), 3 * (row + col), row, col),
            writeable=True,
        )
        views = tuple(data.oMi[j].rotation for j in joints)
        if not all(np.shares_memory(v, data.oMi[j].rotation) for v, j in zip(views, joints)):
            raise RuntimeError("pinocchio's oMi rotations are not views of its data")
        self.rot_pairs = tuple(zip(blocks, views))
        # each foot's cone rows, repeated for each of its points (C R in one product per foot)
        tiled = np.repeat(self.cone[:, None], npf, axis=1)  # (nf, npf, kr, 3)
        self.cone_parts = tuple(zip(cone_blocks, tiled, views))
        self.nc = nc
        self.solver: Any = None  # daqp.Model, set up on the first call
        self.tau: np.ndarray = np.full(len(actuated_v), np.nan)
        self.forces: np.ndarray = np.full((nc, 3), np.nan)
        self.sole_forces: np.ndarray = self.forces
        self.slack = self.y_in
        self.residual = math.nan
        self.solve_time = 0.0

    def solve(self, q: np.ndarray) -> str:
        """Solve at the Pinocchio configuration ``q`` (a finite ``(nq,)`` float array): ``""`` on
        success (results in the attributes), else why not (``"infeasible or failed: ..."`` when
        DAQP finds no solution, ``"failed: ..."`` when it raises)."""
        model, data = self.model, self.data
        # one pass for the CoM Jacobian and every joint Jacobian (jacobianCenterOfMass computes
        # the latter as computeJointJacobians does); g(q) = -M J_com^T g_0
        np.dot(self.mg, pin.jacobianCenterOfMass(model, data, q, False), out=self.gq)
        if self.contiguous:
            self.g_eq[:] = self.gq[: len(self.g_eq)]
        else:
            np.take(self.gq, self.cols, out=self.g_eq)
        for block, rot in self.rot_pairs:
            block[...] = rot
        for block, C, rot in self.cone_parts:  # C R, the cone rows of every point of a foot
            np.matmul(C, rot, out=block)
        gfj, local, ids = pin.getFrameJacobian, pin.LOCAL, self.foot_frame_ids
        if len(ids) == 2:
            np.concatenate(
                (gfj(model, data, ids[0], local), gfj(model, data, ids[1], local)), out=self.J_feet
            )
        else:
            np.concatenate([gfj(model, data, fid, local) for fid in ids], out=self.J_feet)
        if self.J_sel is not None:
            np.take(self.J_feet, self.cols, axis=1, out=self.J_sel)
        np.matmul(self.JfT, self.TT, out=self.JT)  # J^T = J_feet^T T^T
        t0 = time.perf_counter()
        try:
            if self.solver is None:
                self.solver = daqp.Model()
                flag = self.solver.setup(self.H, self.c, self.A, self.bu, self.bl, self.sense)[0]
            else:  # given sense: a cold start, the answer does not depend on earlier calls
                flag = self.solver.update(A=self.A, bupper=self.bu, sense=self.sense)
            if flag < 0:
                self.solver = None
                return f"failed: daqp refused the problem (flag {flag})"
            x, _, exitflag, _ = self.solver.solve()
        except Exception as exc:  # noqa: BLE001  a solver may raise on a degenerate problem
            self.solver = None
            self.solve_time = time.perf_counter() - t0
            return f"failed: daqp raised {type(exc).__name__}: {exc}"
        self.solve_time = time.perf_counter() - t0
        if exitflag <= 0 or not (math.isfinite(x.dot(x)) or np.isfinite(x).all()):
            return "infeasible or failed: daqp found no solution"
        np.dot(self.A, x, out=self.y)
        self.slack = self.y_in if self.h_zero else self.y_in - self.h
        r = self.y_eq
        np.subtract(self.g_eq, r, out=r)
        self.residual = math.sqrt(r.dot(r))
        m = self.m
        tau = self.gq.take(self.vidx)  # joints no contact reaches: tau = g
        tau[self.reached_joints] = x[m:]
        self.tau = tau
        self.sole_forces = x[:m].reshape(self.nc, 3)
        fw = np.dot(self.W, x[:m]).reshape(self.nc, 3)
        fw.flags.writeable = False
        self.forces = fw
        return ""
