"""The centroidal momentum balance of the simulated robot: a check that the sensed contact forces
explain the simulated motion.

``dh_G/dt = sum_k [f_k ; (p_k - c) x f_k] + [m g ; 0]`` for the external wrenches (contacts,
``xfrc_applied`` pushes) about the CoM ``c``; joint torques, damping and armature are internal and
do not enter. ``dh_G/dt`` comes from ``pinocchio.computeCentroidalMomentumTimeVariation(model,
data, q, v, a)`` with MuJoCo's acceleration converted (:mod:`wbsim.conventions`).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pinocchio as pin

from wbsim.contacts import ContactSensing
from wbsim.errors import WbsimError

__all__ = ["MomentumBalance"]


class MomentumBalance:
    """Residual of the centroidal momentum balance of the simulated robot.

    ``residual = dh_G/dt - ([F + m g ; M_G])`` with ``dh_G/dt`` ``(6,)`` (linear N, angular N·m,
    world-aligned, about the CoM) from ``pinocchio.computeCentroidalMomentumTimeVariation`` at the
    simulated acceleration, ``F`` and ``M_G`` the sum of the external forces on the robot and their
    moment about the CoM: contact forces (from :class:`~wbsim.contacts.ContactSensing`) and, if
    given, MuJoCo's ``xfrc_applied`` on the robot's bodies (a force at the body CoM ``xipos`` and a
    torque). ``g`` is MuJoCo's ``opt.gravity``.

    ``dh_G/dt`` comes from the simulated motion (``qacc``) and Pinocchio's model alone, the wrench
    from the sensed contact forces alone: the two are independent, so a force read wrongly from
    MuJoCo (frame, sign, decoding) shows up as a residual.

    Args:
        robot: a :class:`wbsim.Robot`.

    Attributes:
        weight: ``m |g|``, N (the scale of :meth:`relative`).
        max_norm: largest residual norm seen by :meth:`residual`, N (mixed N and N·m).
    """

    def __init__(self, robot):
        self.robot = robot
        self.model = robot.pin_model
        self.data = self.model.createData()
        self.mass = float(robot.total_mass)
        self.gravity = np.array(robot.mj_model.opt.gravity, dtype=float)
        self.weight = self.mass * float(np.linalg.norm(self.gravity))
        self._weight_vector = self.mass * self.gravity
        self._weight_list = self._weight_vector.tolist()
        m = robot.mj_model
        root = m.body_rootid[next(iter(robot.feet.values())).mj_body_id] if robot.has_feet else (
            m.body_rootid[m.jnt_bodyid[0]])
        self._robot_bodies = np.flatnonzero(m.body_rootid == root)
        self.max_norm = 0.0
        self._vdot = robot.converter.mj_acceleration_to_pin  # qacc -> vdot (float arrays)
        self._com = self.data.com  # Pinocchio's per-subtree CoMs (com[0]: the robot's)
        self._ones: dict[int, np.ndarray] = {}
        self._views: tuple | None = None  # (data, qacc, xfrc_applied, xipos) of the last MjData
        self._out: tuple | None = None  # views of Pinocchio's data.dhg and data.com[0] (_outputs)
        self._res = np.empty(6)  # scratch of _residual

    def acceleration(self, q: np.ndarray, v: np.ndarray, qacc: np.ndarray) -> np.ndarray:
        """Pinocchio ``vdot (nv,)`` from MuJoCo's ``qacc (nv,)`` at Pinocchio state ``(q, v)``:
        :meth:`wbsim.conventions.StateConverter.mj_acceleration_to_pin`."""
        return self._vdot(np.asarray(q, dtype=float), np.asarray(v, dtype=float),
                          np.asarray(qacc, dtype=float))

    def residual(self, q: np.ndarray, v: np.ndarray, qacc: np.ndarray, sensing: ContactSensing,
                 xfrc_applied: np.ndarray | None = None, xipos: np.ndarray | None = None
                 ) -> np.ndarray:
        """The residual ``(6,)`` ``[linear (N); angular (N·m)]``, world-aligned, about the CoM.

        Args:
            q, v: the Pinocchio state at which ``qacc`` and ``sensing`` were computed (after
                ``mj_step``: the state BEFORE the step, i.e. the one the controller saw).
            qacc: MuJoCo's ``d.qacc (nv,)``.
            sensing: contacts of the same state.
            xfrc_applied: MuJoCo's ``d.xfrc_applied (nbody, 6)`` (``[force; torque]``, world), or
                ``None`` when nothing pushes.
            xipos: MuJoCo's ``d.xipos (nbody, 3)`` (body CoMs of the same state), needed with
                ``xfrc_applied``.

        Raises:
            WbsimError: ``xfrc_applied`` pushes without ``xipos``.
        """
        return self._residual(np.asarray(q, dtype=float), np.asarray(v, dtype=float),
                              np.asarray(qacc, dtype=float), sensing, xfrc_applied, xipos)[0].copy()

    def _residual(self, q: np.ndarray, v: np.ndarray, qacc: np.ndarray, sensing: ContactSensing,
                  xfrc_applied: np.ndarray | None, xipos: np.ndarray | None
                  ) -> tuple[np.ndarray, float]:
        """:meth:`residual` for float arrays, with its norm (N, mixed N and N·m); the residual is
        a scratch buffer, overwritten by the next call.

        ``tests/test_diagnostics.py`` checks it against ``solve(velocity_map, qacc - Tdot v)``."""
        a = self._vdot(q, v, qacc)
        dhg, com = self._out or self._outputs()
        pin.computeCentroidalMomentumTimeVariation(self.model, self.data, q, v, a)
        d0, d1, d2, d3, d4, d5 = dhg.tolist()  # the result, data.dhg: [linear; angular]
        cx, cy, cz = com.tolist()
        # contact wrench about the origin from F = sum_k f_k and P = sum_k p_k f_k^T (one matmul
        # instead of k cross products): sum_k p_k x f_k = (P_yz - P_zy, P_zx - P_xz, P_xy - P_yx)
        fx, fy, fz = self._weight_list
        mx = my = mz = 0.0
        forces = sensing.contact_force_world
        k = len(forces)
        if k:
            ones = self._ones.get(k)
            if ones is None:
                ones = self._ones[k] = np.ones(k)
            sx, sy, sz = ones.dot(forces).tolist()
            P = sensing.contact_position_world.T.dot(forces).tolist()
            fx, fy, fz = fx + sx, fy + sy, fz + sz
            mx = P[1][2] - P[2][1] - (cy * sz - cz * sy)  # about the CoM: minus c x F
            my = P[2][0] - P[0][2] - (cz * sx - cx * sz)
            mz = P[0][1] - P[1][0] - (cx * sy - cy * sx)
        res = self._res
        res[0], res[1], res[2] = d0 - fx, d1 - fy, d2 - fz
        res[3], res[4], res[5] = d3 - mx, d4 - my, d5 - mz
        if xfrc_applied is not None:
            xfrc = np.asarray(xfrc_applied)
            if np.count_nonzero(xfrc):
                xf = xfrc[self._robot_bodies]
                if xipos is None:
                    raise WbsimError("xfrc_applied needs xipos (the body CoMs)")
                r = np.asarray(xipos)[self._robot_bodies] - self._com[0]
                res[0:3] -= xf[:, :3].sum(axis=0)
                res[3:6] -= np.cross(r, xf[:, :3]).sum(axis=0) + xf[:, 3:].sum(axis=0)
        norm = math.sqrt(float(res.dot(res)))
        self.max_norm = max(self.max_norm, norm)
        return res, norm

    def residual_from_data(self, data: mujoco.MjData, q: np.ndarray, v: np.ndarray,
                           sensing: ContactSensing) -> np.ndarray:
        """:meth:`residual` ``(6,)`` ``[N; N·m]`` reading ``qacc``, ``xfrc_applied`` and ``xipos``
        from ``data`` (right after ``mj_step`` or ``mj_forward``; ``q (nq,)``, ``v (nv,)`` the
        Pinocchio state they belong to). Raises as :meth:`residual`."""
        return self._from_data(data, q, v, sensing)[0].copy()

    def relative_from_data(self, data: mujoco.MjData, q: np.ndarray, v: np.ndarray,
                           sensing: ContactSensing) -> float:
        """``relative(residual_from_data(data, q, v, sensing))``: ``|residual| / (m g)``, a plain
        number (1 = the robot's weight), the same float bit for bit (the per-step call of
        :func:`wbsim.rollout.run_episode`). Raises as :meth:`residual`."""
        return self._from_data(data, q, v, sensing)[1] / self.weight

    def _from_data(self, data: mujoco.MjData, q: np.ndarray, v: np.ndarray,
                   sensing: ContactSensing) -> tuple[np.ndarray, float]:
        """:meth:`_residual` on ``data``'s ``qacc`` (and ``xfrc_applied``, ``xipos`` when something
        pushes), through views cached per ``MjData`` (its arrays are views of fixed buffers)."""
        views = self._views
        if views is None or views[0] is not data:
            views = self._views = (data, data.qacc, data.xfrc_applied, data.xipos)
        if type(q) is not np.ndarray or type(v) is not np.ndarray:
            q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        if np.count_nonzero(views[2]):
            return self._residual(q, v, views[1], sensing, views[2], views[3])
        return self._residual(q, v, views[1], sensing, None, None)

    def _outputs(self) -> tuple[np.ndarray, np.ndarray]:
        """Views ``(6,)`` of ``data.dhg`` and ``(3,)`` of ``data.com[0]`` (Pinocchio hands out views
        of its ``Data``: they follow every computation, no conversion per call)."""
        self._out = (self.data.dhg.vector, self.data.com[0])
        return self._out

    def __getstate__(self) -> dict:
        """For copy and pickle: without the cached views of an ``MjData`` or of Pinocchio's
        ``Data`` (rebuilt at the next call)."""
        state = self.__dict__.copy()
        state["_views"] = state["_out"] = None
        return state

    def relative(self, residual: np.ndarray) -> float:
        """``|residual| / (m g)``."""
        r = residual if type(residual) is np.ndarray else np.asarray(residual, dtype=float)
        if r.ndim != 1:
            r = r.reshape(-1)
        return math.sqrt(r.dot(r)) / self.weight  # = np.linalg.norm(r) / weight, bit for bit
