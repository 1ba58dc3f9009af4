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
    "MjDataGather",
    "StateConverter",
    "base_tilt",
    "buffer_address",
    "quat_wxyz_to_xyzw",
    "quat_xyzw_to_wxyz",
    "rotation_from_wxyz",
    "world_to_base_velocity",
]


def world_to_base_velocity(x: float, y: float, z: float, w: float, vx: float, vy: float,
                           vz: float) -> tuple[float, float, float]:
    """A world-frame vector ``(vx, vy, vz)`` (e.g. the base's linear velocity, m/s) in the frame of
    the base quaternion ``(x, y, z, w)`` (base to world, Pinocchio's order; normalised here):
    ``R^T v`` with ``R`` the rotation matrix of ``mujoco.mju_quat2Mat``, written out on Python
    floats (this runs every env step). The rotation of
    :meth:`StateConverter.base_velocity_to_local`.

    Raises:
        WbsimError: a zero quaternion.
    """
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if n == 0.0:
        raise WbsimError("mj_to_pin: the base quaternion is zero")
    w, x, y, z = w / n, x / n, y / n, z / n
    # R (base to world) of the unit quaternion, as mju_quat2Mat; v_base = R^T v_world
    q00, q01, q02, q03 = w * w, w * x, w * y, w * z
    q11, q12, q13 = x * x, x * y, x * z
    q22, q23, q33 = y * y, y * z, z * z
    r0, r1, r2 = q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02)
    r3, r4, r5 = 2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01)
    r6, r7, r8 = 2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33
    return (r0 * vx + r3 * vy + r6 * vz, r1 * vx + r4 * vy + r7 * vz, r2 * vx + r5 * vy + r8 * vz)


def buffer_address(a: np.ndarray) -> int:
    """The address of ``a``'s first byte (numpy's array interface): how :class:`MjDataGather` and
    the contact sensor's raw read of ``data.contact`` (:mod:`wbsim.contacts`) place views of
    MuJoCo's buffers."""
    return a.__array_interface__["data"][0]


def base_tilt(w: float, x: float, y: float, z: float) -> float:
    """Angle (rad, in ``[0, pi]``) between the base's z axis and the world's vertical, from the base
    quaternion ``(w, x, y, z)`` (base to world, any non-zero norm): ``acos(R[2, 2])`` with
    ``R[2, 2] = 1 - 2 (x^2 + y^2) / |q|^2``, the entry of ``mujoco.mju_quat2Mat`` for the normalised
    quaternion, clamped to ``[-1, 1]`` against round-off. On Python floats (this runs every step,
    in the env's reward and in the rollout's log). A NaN entry gives NaN; a zero quaternion gives
    NaN (no rotation is defined). ``tests/test_conventions.py`` checks it against
    ``mju_quat2Mat``."""
    n2 = w * w + x * x + y * y + z * z
    zz = 1.0 - 2.0 * (x * x + y * y) / n2 if n2 > 0.0 else math.nan
    return math.acos(-1.0 if zz < -1.0 else (1.0 if zz > 1.0 else zz))  # NaN kept


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


class MjDataGather:
    """Chosen entries of several fixed-size ``mujoco.MjData`` arrays, read with ONE numpy ``take``.

    Every fixed-size array of ``mjData`` (``qpos``, ``qvel``, ``xpos``, ``subtree_com``, ``cvel``,
    ``site_xpos``, ...) lives in one allocation of ``data.nbuffer`` bytes (MuJoCo's ``mjData.buffer``)
    and the binding's arrays are views into it. At construction the offset of each requested array
    is read from the binding's own view (its address), and a read-only float64 view spanning them is
    made; a gather is then one ``take`` from that view instead of one per array (each numpy call on
    a tiny array costs ~1 us, more with the caches cold after ``mj_step``). The view keeps a
    reference to ``data``. If the layout is not as expected (an array not float64 and C-contiguous,
    an offset not a multiple of 8 bytes, the span larger than ``data.nbuffer``), :attr:`one_take` is
    ``False`` and :meth:`gather` reads array by array (same values).

    Args:
        data: the ``mujoco.MjData``.
        parts: ``(field name, flat indices into that field)`` pairs, e.g. ``("qpos", [0, 1, 2])``,
            ``("cvel", 6 * body + [0, 1, 2])``; the result holds them in this order.

    Raises:
        WbsimError: an unknown field, or an index outside its field.
    """

    def __init__(self, data: mujoco.MjData, parts: Sequence[tuple[str, Sequence[int]]]):
        self.data = data
        self.parts = []
        arrays = {}
        for name, idx in parts:
            arr = getattr(data, name, None)
            if not isinstance(arr, np.ndarray):
                raise WbsimError(f"MjDataGather: MjData has no array field {name!r}")
            idx = np.asarray(idx, dtype=np.intp).reshape(-1)
            if idx.size and (idx.min() < 0 or idx.max() >= arr.size):
                raise WbsimError(f"MjDataGather: index outside {name} (size {arr.size})")
            arrays[name] = arr
            self.parts.append((name, idx))
        #: number of gathered values
        self.size = int(sum(idx.size for _, idx in self.parts))

        ok = all(a.dtype == np.float64 and a.flags.c_contiguous for a in arrays.values())
        if ok and arrays:
            lo = min(arrays.values(), key=buffer_address)
            start = buffer_address(lo)
            end = max(buffer_address(a) + a.nbytes for a in arrays.values())
            offsets = {k: buffer_address(a) - start for k, a in arrays.items()}
            ok = (end - start <= int(data.nbuffer)
                  and all(off % 8 == 0 for off in offsets.values()))
        #: ``True``: one ``take`` from a view of MjData's buffer; ``False``: array by array
        self.one_take = bool(ok and arrays)
        #: with :attr:`one_take`, ``gather()`` is ``view.take(index)``: ``view`` a read-only float64
        #: ``(k,)`` view spanning the requested arrays, ``index`` ``(size,)`` intp (for callers that
        #: take into their own buffers without the method call); else both ``None``
        self.index = None
        self.view = None
        if self.one_take:
            self.view = np.lib.stride_tricks.as_strided(
                lo.reshape(-1), shape=((end - start) // 8,), strides=(8,), writeable=False)
            self.index = np.concatenate(
                [offsets[name] // 8 + idx for name, idx in self.parts]).astype(np.intp)
            # the view must read what the binding's arrays hold
            if not np.array_equal(self.view.take(self.index), self._gather_each(), equal_nan=True):
                self.one_take, self.view, self.index = False, None, None

    def _gather_each(self) -> np.ndarray:
        d = self.data
        if not self.parts:
            return np.empty(0)
        return np.concatenate([getattr(d, name).reshape(-1).take(idx) for name, idx in self.parts])

    def gather(self, out: np.ndarray | None = None) -> np.ndarray:
        """The entries ``(size,)`` (float64), fresh, or written into ``out`` (contiguous float64)."""
        if self.one_take:
            return self.view.take(self.index, out=out)
        g = self._gather_each()
        if out is None:
            return g
        out[:] = g
        return out

    def __getstate__(self):
        raise TypeError("MjDataGather holds a view of one MjData's memory; build a new one instead")


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
        nbase_q, nbase_v = (7, 6) if self.floating else (0, 0)
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

    @property
    def q_from_mj(self) -> np.ndarray:
        """``(nq,)`` read-only gather map: Pinocchio ``q = qpos[q_from_mj]`` (MuJoCo ``qpos``)."""
        return self._q_from_mj

    @property
    def v_from_mj(self) -> np.ndarray:
        """``(nv,)`` read-only gather map: ``qvel[v_from_mj]`` is Pinocchio's ``v`` except the base's
        linear part, which is still in the world frame (see :meth:`base_velocity_to_local`)."""
        return self._v_from_mj

    # -- states ------------------------------------------------------------------------------------
    def mj_to_pin(self, qpos: np.ndarray, qvel: np.ndarray | None = None):
        """MuJoCo ``qpos (nq,)``, ``qvel (nv,)`` -> Pinocchio ``q (nq,)``, ``v (nv,)`` (fresh arrays).

        Returns ``(q, v)``; ``v`` is ``None`` when ``qvel`` is ``None``. Units: m, rad, m/s, rad/s.
        The base's linear velocity is rotated into the base frame with the normalised quaternion
        (the rotation matrix of ``mujoco.mju_quat2Mat``, written out on scalars: this runs every
        step). Raises :class:`~wbsim.errors.WbsimError` for a zero base quaternion.
        """
        qpos = np.asarray(qpos, dtype=float)
        q = qpos.take(self._q_from_mj)
        if qvel is None:
            return q, None
        v = np.asarray(qvel, dtype=float).take(self._v_from_mj)
        if self.floating:
            self.base_velocity_to_local(q, v)
        return q, v

    def base_velocity_to_local(self, q: np.ndarray, v: np.ndarray) -> tuple[float, ...]:
        """Rotate ``v[0:3]`` (the base's linear velocity, world frame, m/s) into the base frame, in
        place, with the normalised quaternion ``q[3:7]`` ``(x, y, z, w)`` (the rotation matrix of
        ``mujoco.mju_quat2Mat``, written out on scalars: this runs every step). The last step of
        :meth:`mj_to_pin` on ``q = qpos[q_from_mj]``, ``v = qvel[v_from_mj]``.

        Returns:
            ``(x, y, z, w, vx, vy, vz)``: the quaternion as given (not normalised) and the world
            linear velocity, as Python floats (for callers that need them too).

        Raises:
            WbsimError: a zero base quaternion.
        """
        x0, y0, z0, w0 = q[3:7].tolist()
        a, b, c = v[0:3].tolist()
        # three item writes (cheaper than one slice write from a tuple)
        v[0], v[1], v[2] = world_to_base_velocity(x0, y0, z0, w0, a, b, c)
        return x0, y0, z0, w0, a, b, c

    def pin_to_mj(self, q: np.ndarray, v: np.ndarray | None = None):
        """Pinocchio ``q (nq,)``, ``v (nv,)`` -> MuJoCo ``qpos (nq,)``, ``qvel (nv,)``.

        Returns ``(qpos, qvel)``; ``qvel`` is ``None`` when ``v`` is ``None``.
        """
        q = np.asarray(q, dtype=float)
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
        """Pinocchio ``vdot (nv,)`` from MuJoCo's ``qacc (nv,)`` at the Pinocchio state ``(q, v)``
        (float arrays, ``(nq,)`` and ``(nv,)``).

        ``qacc = T vdot + Tdot v`` (module docstring; ``Tdot v`` non-zero only on the base's linear
        rows, ``R (omega x v_lin)``), so block by block: ``vdot_lin = R^T qacc_lin - omega x
        v_lin``, ``vdot_ang = qacc_ang``, the joints permuted by name. ``R^T qacc_lin`` rotates by
        the conjugate of the base quaternion ``q[3:7]`` (x, y, z, w; normalised), on Python floats
        (this runs every step, in :class:`wbsim.momentum.MomentumBalance`). Equal to
        ``solve(velocity_map(q), qacc - velocity_map_dot_times_v(q, v))`` to round-off
        (``tests/test_conventions.py``) at a fraction of its cost. Returns a fresh array.
        """
        a = qacc.take(self._v_from_mj)
        if self.floating:
            x, y, z, w = q[3:7].tolist()
            l0, l1, l2, w0, w1, w2 = v[0:6].tolist()
            b0, b1, b2 = a[0:3].tolist()
            s = 1.0 / math.sqrt(x * x + y * y + z * z + w * w)
            x, y, z, w = -x * s, -y * s, -z * s, w * s  # the conjugate: rotation by R^T
            # r = b + 2 w (u x b) + 2 u x (u x b), u = (x, y, z)
            t0, t1, t2 = 2.0 * (y * b2 - z * b1), 2.0 * (z * b0 - x * b2), 2.0 * (x * b1 - y * b0)
            a[0] = b0 + w * t0 + (y * t2 - z * t1) - (w1 * l2 - w2 * l1)
            a[1] = b1 + w * t1 + (z * t0 - x * t2) - (w2 * l0 - w0 * l2)
            a[2] = b2 + w * t2 + (x * t1 - y * t0) - (w0 * l1 - w1 * l0)
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
