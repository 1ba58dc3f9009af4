"""Every conversion between MuJoCo's and Pinocchio's state conventions lives here.

Verified against the installed MuJoCo 4.x (see ``tests/test_conventions.py``, one test per row):

=============================  ==================================  ==================================
quantity                       MuJoCo                              Pinocchio
=============================  ==================================  ==================================
free-joint position            ``qpos[0:3]``, world frame          ``q[0:3]``, world frame
free-joint quaternion          ``qpos[3:7]``, ``(w, x, y, z)``     ``q[3:7]``, ``(x, y, z, w)``
free-joint linear velocity     ``qvel[0:3]``, WORLD frame          ``v[0:3]``, base (LOCAL) frame
free-joint angular velocity    ``qvel[3:6]``, base (LOCAL) frame   ``v[3:6]``, base (LOCAL) frame
1-DoF joints                   by name (``jnt_qposadr``)           by name (``idx_q``, ``idx_v``)
generalised forces             ``f_mj`` (dual of ``qvel``)         ``f_pin = T^T f_mj``
spatial vectors                rotation first (``cvel``,           linear first (``Motion``,
                               ``mj_objectVelocity``)              ``Force``)
contact force                  ``mj_contactForce``: contact        forces at points, world frame
                               frame, normal first; frame rows     (LOCAL_WORLD_ALIGNED Jacobians)
                               normal, t1, t2 (z-up plane: world
                               z, y, -x)
friction of a geom pair        higher ``geom_priority``'s, else    a controller's cone fits inside
                               the larger (``contact.friction``);  MuJoCo's (pyramidal: the diamond)
                               pyramidal cone: ``|f_t1| + |f_t2|
                               <= mu f_n``
=============================  ==================================  ==================================

With ``R`` the base rotation (base to world), the velocity map is ``qvel = T(q) v`` with
``T = blockdiag(R, I_3, P)`` where ``P`` permutes the joint velocities by name. Kinetic energy is
invariant, so ``M_pin = T^T M_mj T``; the equations of motion ``M_mj qacc + b_mj = f_mj`` with
``qacc = T vdot + Tdot v`` give ``b_pin = T^T (b_mj + M_mj Tdot v)``, where the only non-zero block of
``Tdot v`` is the linear one: ``R (omega x v_lin)``, ``omega = v[3:6]``. That term is why the bias
forces of the two libraries differ whenever the base turns.

The public API of wbsim speaks ``(w, x, y, z)``; the ``(x, y, z, w)`` order never leaves this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np
import pinocchio as pin

from wbsim.errors import WbsimError

__all__ = [
    "StateConverter",
    "base_tilt",
    "cross",
    "normalised_quaternion",
    "quat_wxyz_to_xyzw",
    "quat_xyzw_to_wxyz",
    "rotate_to_base",
    "rotation_from_wxyz",
]


def base_tilt(w, x, y, z):
    """Angle (rad, in ``[0, pi]``) between the base's z axis and the world's vertical, from the base
    quaternion ``(w, x, y, z)`` (base to world, any non-zero norm): ``acos(R[2, 2])`` with
    ``R[2, 2] = 1 - 2 (x^2 + y^2) / |q|^2``, the entry of ``mujoco.mju_quat2Mat`` for the normalised
    quaternion, clamped to ``[-1, 1]`` against round-off. Floats or arrays (element-wise); a NaN
    entry or a zero quaternion gives NaN. ``tests/test_conventions.py`` checks it against
    ``mju_quat2Mat``."""
    n2 = w * w + x * x + y * y + z * z
    if isinstance(n2, float):  # one quaternion (numpy's float64 is a float): fewer numpy calls
        if not n2 > 0.0:
            return math.nan
        return float(np.arccos(min(max(1.0 - 2.0 * (x * x + y * y) / n2, -1.0), 1.0)))
    zz = 1.0 - 2.0 * (x * x + y * y) / np.where(n2 > 0.0, n2, np.nan)
    return np.arccos(np.minimum(np.maximum(zz, -1.0), 1.0))  # NaN kept


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products ``a x b`` of ``(..., 3)`` arrays (component formula: ``numpy.cross`` costs
    ~10 us of wrapper per call, several per state conversion)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def normalised_quaternion(quat: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(..., 4)`` (any component order): ``quat / |quat|``, a fresh array.

    Raises:
        WbsimError: a zero or NaN quaternion (no rotation is defined).
    """
    quat = np.asarray(quat, dtype=float)
    if quat.ndim == 1:
        a, b, c, d = quat.tolist()
        n = math.sqrt(a * a + b * b + c * c + d * d)
        if not n > 0.0:
            raise WbsimError("a base quaternion is zero (or NaN): no rotation is defined")
        return quat / n
    norm = np.sqrt(np.einsum("...i,...i", quat, quat))
    if not np.all(norm > 0.0):
        raise WbsimError("a base quaternion is zero (or NaN): no rotation is defined")
    return quat / norm[..., None]


def rotate_to_base(quat_xyzw: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """``R^T vec``: world vectors ``vec (..., 3)`` in the frame of the base quaternion ``quat_xyzw
    (..., 4)`` (``(x, y, z, w)``, Pinocchio's order, base to world; normalised here), as
    ``mujoco.mju_quat2Mat``'s ``R`` would give them: a rotation by the conjugate quaternion. One
    vector: ``mujoco.mju_rotVecQuat``; several: ``r = b + 2 w (u' x b) + 2 u' x (u' x b)`` with
    ``u' = -u`` (leading axes broadcast).

    Raises:
        WbsimError: a zero or NaN quaternion.
    """
    quat = np.asarray(quat_xyzw, dtype=float)
    b = np.asarray(vec, dtype=float)
    if quat.ndim == 1 and b.ndim == 1:
        x, y, z, w = quat.tolist()
        n = math.sqrt(x * x + y * y + z * z + w * w)
        if not n > 0.0:
            raise WbsimError("a base quaternion is zero (or NaN): no rotation is defined")
        out = np.empty(3)
        mujoco.mju_rotVecQuat(out, b, np.array([w / n, -x / n, -y / n, -z / n]))
        return out
    norm = np.sqrt(np.einsum("...i,...i", quat, quat))
    if not np.all(norm > 0.0):
        raise WbsimError("a base quaternion is zero (or NaN): no rotation is defined")
    quat = quat / norm[..., None]
    u, w = -quat[..., 0:3], quat[..., 3:4]
    t = 2.0 * cross(u, b)
    return b + w * t + cross(u, t)


def quat_wxyz_to_xyzw(quat_wxyz: np.ndarray) -> np.ndarray:
    """``(w, x, y, z)`` -> ``(x, y, z, w)``; shape ``(..., 4)``, values copied, not normalised."""
    quat_wxyz = np.asarray(quat_wxyz, dtype=float)
    return np.concatenate([quat_wxyz[..., 1:4], quat_wxyz[..., 0:1]], axis=-1)


def quat_xyzw_to_wxyz(quat_xyzw: np.ndarray) -> np.ndarray:
    """``(x, y, z, w)`` -> ``(w, x, y, z)``; shape ``(..., 4)``, values copied, not normalised."""
    quat_xyzw = np.asarray(quat_xyzw, dtype=float)
    return np.concatenate([quat_xyzw[..., 3:4], quat_xyzw[..., 0:3]], axis=-1)


def rotation_from_wxyz(quat_wxyz: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` (body to world) of a unit quaternion ``(w, x, y, z)``.

    The quaternion is normalised first (``mujoco.mju_quat2Mat`` assumes unit norm).
    """
    quat = np.asarray(quat_wxyz, dtype=float)
    quat = quat / np.linalg.norm(quat)
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)


class StateConverter:
    """Maps a MuJoCo state ``(qpos, qvel)`` to a Pinocchio state ``(q, v)`` and back, by joint name.

    Supports a free-floating root (MuJoCo ``free`` joint, Pinocchio ``JointModelFreeFlyer``) or a fixed
    root, and 1-DoF joints (hinge / slide, revolute / prismatic). Joints present in one model and not the
    other raise :class:`~wbsim.errors.WbsimError` at construction.

    Args:
        mj_model: the MuJoCo model.
        pin_model: the Pinocchio model of the same robot.
        joint_names: the 1-DoF joints to map, by name (same name in both models).
        mj_free_joint: name of MuJoCo's free joint, or ``None`` for a fixed base.
    """

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        pin_model: pin.Model,
        joint_names: Sequence[str],
        mj_free_joint: str | None,
    ):
        self.nq_mj, self.nv_mj = mj_model.nq, mj_model.nv
        self.nq_pin, self.nv_pin = pin_model.nq, pin_model.nv
        self.floating = mj_free_joint is not None
        nbase_v = 6 if self.floating else 0
        if self.nv_mj != self.nv_pin or self.nq_mj != self.nq_pin:
            raise WbsimError(
                f"MuJoCo (nq={self.nq_mj}, nv={self.nv_mj}) and Pinocchio (nq={self.nq_pin}, "
                f"nv={self.nv_pin}) models have different sizes"
            )
        if self.nv_mj != nbase_v + len(joint_names):
            raise WbsimError(
                f"{len(joint_names)} joints plus the base do not cover nv={self.nv_mj}"
            )
        if self.floating:
            jid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, mj_free_joint)
            if jid < 0 or mj_model.jnt_type[jid] != mujoco.mjtJoint.mjJNT_FREE:
                raise WbsimError(f"MuJoCo model has no free joint named {mj_free_joint!r}")
            self.mj_base_qadr = int(mj_model.jnt_qposadr[jid])
            self.mj_base_vadr = int(mj_model.jnt_dofadr[jid])
            if pin_model.joints[1].nq != 7:
                raise WbsimError("Pinocchio model's first joint is not a free-flyer")
        mj_q, mj_v, pin_q, pin_v = [], [], [], []
        for name in joint_names:
            jid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise WbsimError(f"joint {name!r} is not in the MuJoCo model")
            if not pin_model.existJointName(name):
                raise WbsimError(f"joint {name!r} is not in the Pinocchio model")
            pj = pin_model.joints[pin_model.getJointId(name)]
            if pj.nq != 1 or pj.nv != 1:
                raise WbsimError(f"joint {name!r}: only 1-DoF joints are supported")
            mj_q.append(mj_model.jnt_qposadr[jid])
            mj_v.append(mj_model.jnt_dofadr[jid])
            pin_q.append(pj.idx_q)
            pin_v.append(pj.idx_v)
        self.joint_names = tuple(joint_names)
        #: index arrays, one entry per joint in ``joint_names`` order
        self.mj_qadr = np.asarray(mj_q, dtype=int)
        self.mj_vadr = np.asarray(mj_v, dtype=int)
        self.pin_qidx = np.asarray(pin_q, dtype=int)
        self.pin_vidx = np.asarray(pin_v, dtype=int)
        # permutation p with qvel[p_mj] = v[p_pin] for joints, as full-size index maps
        self._v_pin_to_mj = np.empty(self.nv_mj, dtype=int)
        if self.floating:
            self._v_pin_to_mj[self.mj_base_vadr : self.mj_base_vadr + 6] = np.arange(6)
        self._v_pin_to_mj[self.mj_vadr] = self.pin_vidx
        # full gather maps for mj_to_pin (one ``take`` each): q = qpos[q_from_mj] (the quaternion
        # reordered (w, x, y, z) -> (x, y, z, w) by the map), v = qvel[v_from_mj] (the base's linear
        # part then rotated into the base frame, base_velocity_to_local)
        self._q_from_mj = np.empty(self.nq_pin, dtype=np.intp)
        self._q_from_mj[self.pin_qidx] = self.mj_qadr
        self._v_from_mj = np.empty(self.nv_pin, dtype=np.intp)
        self._v_from_mj[self.pin_vidx] = self.mj_vadr
        if self.floating:
            a, b = self.mj_base_qadr, self.mj_base_vadr
            self._q_from_mj[0:7] = [a, a + 1, a + 2, a + 4, a + 5, a + 6, a + 3]
            self._v_from_mj[0:6] = np.arange(b, b + 6)
        self._q_from_mj.setflags(write=False)
        self._v_from_mj.setflags(write=False)

    # -- states ------------------------------------------------------------------------------------
    def mj_to_pin(self, qpos: np.ndarray, qvel: np.ndarray | None = None):
        """MuJoCo ``qpos (..., nq)``, ``qvel (..., nv)`` -> Pinocchio ``q (..., nq)``, ``v (...,
        nv)`` (fresh arrays; leading axes for several states at once).

        Returns ``(q, v)``; ``v`` is ``None`` when ``qvel`` is ``None``. Units: m, rad, m/s, rad/s.
        The base quaternion is normalised (Pinocchio assumes a unit one) and the base's linear
        velocity rotated into the base frame (:func:`rotate_to_base`). Raises
        :class:`~wbsim.errors.WbsimError` for a zero or NaN quaternion.
        """
        q = np.asarray(qpos, dtype=float).take(self._q_from_mj, axis=-1)
        if self.floating:  # a unit quaternion for Pinocchio, whatever MuJoCo's state held
            q[..., 3:7] = normalised_quaternion(q[..., 3:7])
        if qvel is None:
            return q, None
        v = np.asarray(qvel, dtype=float).take(self._v_from_mj, axis=-1)
        if self.floating:
            v[..., 0:3] = rotate_to_base(q[..., 3:7], v[..., 0:3])
        return q, v

    def pin_to_mj(self, q: np.ndarray, v: np.ndarray | None = None):
        """Pinocchio ``q (nq,)``, ``v (nv,)`` -> MuJoCo ``qpos (nq,)``, ``qvel (nv,)``.

        Returns ``(qpos, qvel)``; ``qvel`` is ``None`` when ``v`` is ``None``.
        """
        q = np.asarray(q, dtype=float)
        if self.floating:
            q = q.copy()
            q[3:7] = normalised_quaternion(q[3:7])
        qpos = np.empty(self.nq_mj)
        qpos[self.mj_qadr] = q[self.pin_qidx]
        if self.floating:
            a = self.mj_base_qadr
            qpos[a : a + 3] = q[0:3]
            qpos[a + 3 : a + 7] = quat_xyzw_to_wxyz(q[3:7])
        if v is None:
            return qpos, None
        v = np.asarray(v, dtype=float)
        qvel = np.empty(self.nv_mj)
        qvel[self.mj_vadr] = v[self.pin_vidx]
        if self.floating:
            b = self.mj_base_vadr
            rot = rotation_from_wxyz(qpos[self.mj_base_qadr + 3 : self.mj_base_qadr + 7])
            qvel[b : b + 3] = rot @ v[0:3]
            qvel[b + 3 : b + 6] = v[3:6]
        return qpos, qvel

    # -- linear maps -------------------------------------------------------------------------------
    def velocity_map(self, q: np.ndarray) -> np.ndarray:
        """``T (nv, nv)`` with ``qvel = T v`` at Pinocchio configuration ``q``."""
        T = np.zeros((self.nv_mj, self.nv_pin))
        T[self.mj_vadr, self.pin_vidx] = 1.0
        if self.floating:
            b = self.mj_base_vadr
            rot = pin.Quaternion(np.asarray(q[3:7], dtype=float)).normalized().toRotationMatrix()
            T[b : b + 3, 0:3] = rot
            T[b + 3 : b + 6, 3:6] = np.eye(3)
        return T

    def velocity_map_dot_times_v(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``Tdot v (nv,)`` in MuJoCo ordering: ``R (omega x v_lin)`` on the base's linear dofs."""
        out = np.zeros(self.nv_mj)
        if self.floating:
            b = self.mj_base_vadr
            rot = pin.Quaternion(np.asarray(q[3:7], dtype=float)).normalized().toRotationMatrix()
            out[b : b + 3] = rot @ np.cross(v[3:6], v[0:3])
        return out

    def mj_acceleration_to_pin(self, q: np.ndarray, v: np.ndarray, qacc: np.ndarray) -> np.ndarray:
        """Pinocchio ``vdot (..., nv)`` from MuJoCo's ``qacc (..., nv)`` at the Pinocchio state
        ``(q, v)`` (``(..., nq)``, ``(..., nv)``; leading axes for several states at once).

        ``qacc = T vdot + Tdot v`` (module docstring; ``Tdot v`` non-zero only on the base's linear
        rows, ``R (omega x v_lin)``), so block by block: ``vdot_lin = R^T qacc_lin - omega x
        v_lin``, ``vdot_ang = qacc_ang``, the joints permuted by name. Equal to
        ``solve(velocity_map(q), qacc - velocity_map_dot_times_v(q, v))`` to round-off
        (``tests/test_conventions.py``). Returns a fresh array.
        """
        a = np.asarray(qacc, dtype=float).take(self._v_from_mj, axis=-1)
        if self.floating:
            a[..., 0:3] = rotate_to_base(q[..., 3:7], a[..., 0:3]) - cross(v[..., 3:6], v[..., 0:3])
        return a

    def mj_matrix_to_pin(self, M_mj: np.ndarray, q: np.ndarray) -> np.ndarray:
        """A MuJoCo mass-like matrix ``(nv, nv)`` in Pinocchio coordinates: ``T^T M_mj T``."""
        T = self.velocity_map(q)
        return T.T @ M_mj @ T

    def mj_force_to_pin(self, f_mj: np.ndarray, q: np.ndarray) -> np.ndarray:
        """A MuJoCo generalised force ``(nv,)`` in Pinocchio coordinates: ``T^T f_mj``."""
        return self.velocity_map(q).T @ np.asarray(f_mj, dtype=float)

    def mj_jacobian_to_pin(self, J_mj: np.ndarray, q: np.ndarray) -> np.ndarray:
        """A MuJoCo Jacobian ``(k, nv)`` (maps ``qvel``) in Pinocchio coordinates: ``J_mj T``."""
        return np.asarray(J_mj) @ self.velocity_map(q)

    def mj_bias_to_pin(
        self, bias_mj: np.ndarray, M_mj: np.ndarray, q: np.ndarray, v: np.ndarray
    ) -> np.ndarray:
        """MuJoCo ``qfrc_bias (nv,)`` in Pinocchio coordinates: ``T^T (b_mj + M_mj Tdot v)``.

        Equals ``pinocchio.nonLinearEffects(model, data, q, v)`` for the same state.
        """
        T = self.velocity_map(q)
        return T.T @ (np.asarray(bias_mj) + M_mj @ self.velocity_map_dot_times_v(q, v))

    def joint_values_mj(self, qpos: np.ndarray) -> np.ndarray:
        """Joint positions ``(n_joints,)`` in ``joint_names`` order from a MuJoCo ``qpos``."""
        return np.asarray(qpos)[self.mj_qadr]

    def joint_values_pin(self, q: np.ndarray) -> np.ndarray:
        """Joint positions ``(n_joints,)`` in ``joint_names`` order from a Pinocchio ``q``."""
        return np.asarray(q)[self.pin_qidx]
