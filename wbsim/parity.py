"""Agreement of the two models of a robot: MuJoCo's (the simulation) and Pinocchio's (the
controllers' model), checked when the robot is loaded.

A controller is only as good as its model's agreement with the simulation. :func:`check_models`
compares what both models must share: total mass, each moving body's mass (MuJoCo's bodies welded
together against Pinocchio's joint inertia), joint limits, and the joint-space mass matrix and
gravity torques at random states (through :mod:`wbsim.conventions`' velocity map). Anything that
differs is refused with a message naming the element.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin

from wbsim.errors import RobotLoadError

__all__ = ["PARITY_RTOL", "check_models"]

#: Relative tolerance of the mass, inertia and gravity comparisons (the built-in robots agree to
#: ~1e-13; URDF numbers rounded by a converter differ by more).
PARITY_RTOL = 1e-8


def check_models(
    name: str,
    mj_model: mujoco.MjModel,
    pin_model: pin.Model,
    converter,
    joint_limits: np.ndarray,
    n_states: int = 5,
    seed: int = 0,
) -> None:
    """Raise unless the MuJoCo and Pinocchio models of robot ``name`` agree.

    Args:
        name: the robot's name (for messages).
        mj_model, pin_model: the two models (a free-flyer root in both).
        converter: their :class:`wbsim.conventions.StateConverter`.
        joint_limits: ``(n_joints, 2)`` MuJoCo's joint ranges, rad, ``converter.joint_names``
            order.
        n_states: random states at which the mass matrices and gravity torques are compared.
        seed: of those states.

    Raises:
        RobotLoadError: the total masses, a body's mass, a joint's limits, the mass matrices or
            the gravity torques differ by more than :data:`PARITY_RTOL` (relative); the message
            names the element and both values.
    """

    def differ(a: float, b: float, scale: float) -> bool:
        return not abs(a - b) <= PARITY_RTOL * max(scale, 1e-12)

    # total mass
    root = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, _root_body(mj_model))
    m_mj, m_pin = float(mj_model.body_subtreemass[root]), float(pin.computeTotalMass(pin_model))
    if differ(m_mj, m_pin, m_pin):
        raise RobotLoadError(
            f"{name}: MuJoCo's model weighs {m_mj:.9g} kg and Pinocchio's "
            f"{m_pin:.9g} kg: the two models of the description disagree"
        )
    # each moving body: MuJoCo's bodies welded to a joint's body against Pinocchio's inertia
    for jid in range(1, pin_model.njoints):
        jname = pin_model.names[jid]
        if jid == 1:
            body = root
        else:
            mj_joint = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, jname)
            body = int(mj_model.jnt_bodyid[mj_joint])
        welded = np.flatnonzero(mj_model.body_weldid == mj_model.body_weldid[body])
        mass_mj = float(mj_model.body_mass[welded].sum())
        mass_pin = float(pin_model.inertias[jid].mass)
        if differ(mass_mj, mass_pin, m_pin):
            body_name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, body)
            raise RobotLoadError(
                f"{name}: the body moved by joint {jname!r} ({body_name!r} and "
                f"the bodies fixed to it) weighs {mass_mj:.9g} kg in MuJoCo and "
                f"{mass_pin:.9g} kg in Pinocchio"
            )
    # joint limits
    for i, jname in enumerate(converter.joint_names):
        pj = pin_model.joints[pin_model.getJointId(jname)]
        lo, hi = pin_model.lowerPositionLimit[pj.idx_q], pin_model.upperPositionLimit[pj.idx_q]
        for a, b, side in ((joint_limits[i, 0], lo, "lower"), (joint_limits[i, 1], hi, "upper")):
            if np.isfinite(a) and np.isfinite(b) and differ(a, b, 1.0):
                raise RobotLoadError(
                    f"{name}: joint {jname!r} has the {side} limit {a:.9g} rad in "
                    f"MuJoCo and {b:.9g} rad in Pinocchio"
                )
    # mass matrix and gravity torques at random states
    rng = np.random.default_rng(seed)
    d, pdata = mujoco.MjData(mj_model), pin_model.createData()
    lo, hi = joint_limits[:, 0].copy(), joint_limits[:, 1].copy()
    lo[~np.isfinite(lo)], hi[~np.isfinite(hi)] = -np.pi, np.pi
    M_mj = np.zeros((mj_model.nv, mj_model.nv))
    labels = _velocity_labels(pin_model)
    for _ in range(n_states):
        q = pin.neutral(pin_model)
        q[0:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[converter.pin_qidx] = rng.uniform(lo, hi)
        d.qpos[:], d.qvel[:] = converter.pin_to_mj(q, np.zeros(pin_model.nv))
        mujoco.mj_forward(mj_model, d)
        mujoco.mj_fullM(mj_model, d, M_mj)
        M_pin = pin.crba(pin_model, pdata, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        diff = np.abs(converter.mj_matrix_to_pin(M_mj, q) - M_pin)
        if diff.max() > PARITY_RTOL * np.abs(M_pin).max():
            row, col = np.unravel_index(np.argmax(diff), diff.shape)
            raise RobotLoadError(
                f"{name}: the mass matrices of MuJoCo and Pinocchio differ by "
                f"{diff.max():.3g} (of {np.abs(M_pin).max():.3g}) at "
                f"({labels[row]}, {labels[col]}): the bodies or the joint frames "
                "of the two models do not match"
            )
        g_pin = pin.computeGeneralizedGravity(pin_model, pdata, q)
        g_mj = converter.mj_force_to_pin(d.qfrc_bias, q)  # v = 0: the bias is gravity alone
        diff = np.abs(g_mj - g_pin)
        if diff.max() > PARITY_RTOL * max(np.abs(g_pin).max(), 1.0):
            i = int(np.argmax(diff))
            raise RobotLoadError(
                f"{name}: the gravity torques of MuJoCo and Pinocchio differ by "
                f"{diff.max():.3g} at {labels[i]}"
            )


def _root_body(mj_model: mujoco.MjModel) -> str:
    """The name of the body that holds the free joint."""
    for j in range(mj_model.njnt):
        if mj_model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            return mujoco.mj_id2name(
                mj_model, mujoco.mjtObj.mjOBJ_BODY, int(mj_model.jnt_bodyid[j])
            )
    raise RobotLoadError("the MuJoCo model has no free joint")


def _velocity_labels(pin_model: pin.Model) -> list[str]:
    """A name for each entry of Pinocchio's velocity vector (``"root_joint[0]"``, joint names)."""
    labels = [""] * pin_model.nv
    for jid in range(1, pin_model.njoints):
        jm = pin_model.joints[jid]
        for k in range(jm.nv):
            labels[jm.idx_v + k] = (
                pin_model.names[jid] if jm.nv == 1 else f"{pin_model.names[jid]}[{k}]"
            )
    return labels
