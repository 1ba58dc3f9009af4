"""A stand pose found for a humanoid that has none: feet flat, knees bent, CoM over the feet.

:func:`find_stand_pose` solves a small inverse-kinematics problem with Pinocchio (damped
Gauss-Newton on frame and centre-of-mass Jacobians) from the description's zero posture: the base
level and lowered by a fraction of the leg length, each foot kept where and as it is at the zero
posture (its sole is flat there), the centre of mass above the middle of the sole points, every
joint as close to its zero posture as these allow. The knees start bent in the direction that
folds the shank backwards (found from the kinematics), so the search does not start at the
straight-leg singularity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pinocchio as pin

from wbsim.errors import RobotLoadError

__all__ = ["find_stand_pose"]

#: Initial knee bend, rad.
_KNEE_START = 0.3
#: Gain of the pull of each joint towards its zero posture, in the tasks' null space (per step).
_POSTURE_GAIN = 0.1


def _chain(model: pin.Model, joint_id: int) -> list[int]:
    """Joint ids from the root's first child down to ``joint_id``."""
    out = []
    while joint_id > 1:  # 1 is the free flyer
        out.append(joint_id)
        joint_id = model.parents[joint_id]
    return out[::-1]


def _knee_starts(
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    foot_frames: Sequence[int],
    lateral: np.ndarray,
    forward: np.ndarray,
) -> dict[int, float]:
    """Joint id -> initial angle (rad) of each leg's knee: the revolute joint of the leg whose axis
    is lateral and which sits nearest half-way between the hip and the foot, bent by
    :data:`_KNEE_START` in the direction that moves the foot backwards."""
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    out: dict[int, float] = {}
    for fid in foot_frames:
        foot = data.oMf[fid].translation
        chain = _chain(model, model.frames[fid].parentJoint)
        if not chain:
            continue
        hip_z = data.oMi[chain[0]].translation[2]
        best, best_d = None, np.inf
        for jid in chain:
            axis = _joint_axis_world(model, data, jid)
            if axis is None or abs(axis @ lateral) < 0.9:
                continue
            d = abs(data.oMi[jid].translation[2] - 0.5 * (hip_z + foot[2]))
            if d < best_d:
                best, best_d = jid, d
        if best is None:
            continue
        axis = _joint_axis_world(model, data, best)
        assert axis is not None  # a revolute joint: chosen above
        moves = np.cross(axis, foot - data.oMi[best].translation)  # foot velocity per rad
        sign = -1.0 if moves @ forward > 0 else 1.0
        iq = model.joints[best].idx_q
        out[best] = float(
            np.clip(sign * _KNEE_START, model.lowerPositionLimit[iq], model.upperPositionLimit[iq])
        )
    return out


def _joint_axis_world(model: pin.Model, data: pin.Data, jid: int) -> np.ndarray | None:
    """World direction of a revolute joint's axis at the last kinematics, else ``None``."""
    if model.joints[jid].nq != 1 or "Prismatic" in model.joints[jid].shortname():
        return None
    S = np.asarray(data.joints[jid].S).ravel()  # motion subspace (linear, angular)
    return data.oMi[jid].rotation @ S[3:6] / max(np.linalg.norm(S[3:6]), 1e-12)


def _step(
    J: np.ndarray, e: np.ndarray, posture: np.ndarray, at_lower: np.ndarray, at_upper: np.ndarray
) -> np.ndarray:
    """The Gauss-Newton step ``dv`` that zeroes ``J dv + e`` (least norm), plus ``posture`` in the
    tasks' null space, with the unknowns at a bound that the step pushes outwards held (removed
    and the step solved again: the active set of the joint limits)."""
    free = np.ones(J.shape[1], dtype=bool)
    for _ in range(J.shape[1]):
        Jf = J[:, free]
        pinv = np.linalg.pinv(Jf, rcond=1e-6)
        dv = np.zeros(J.shape[1])
        post = posture[free]
        dv[free] = -pinv @ e + post - pinv @ (Jf @ post)  # the posture in the null space
        out = free & ((at_lower & (dv < 0)) | (at_upper & (dv > 0)))
        if not out.any():
            return dv
        free &= ~out
    return np.zeros(J.shape[1])


def find_stand_pose(
    model: pin.Model,
    foot_frames: Mapping[str, int],
    sole_frames: Mapping[str, Sequence[int]],
    joint_names: Sequence[str],
    crouch: float = 0.05,
    posture: Mapping[str, float] | None = None,
    iterations: int = 200,
    tolerance: float = 1e-9,
) -> dict[str, float]:
    """Joint angles (rad, by name) of a stand pose of ``model`` (free-flyer root).

    Args:
        model: Pinocchio model with a free-flyer root and a frame at every sole point.
        foot_frames: foot name -> frame id of its link (``"left_foot"``, ``"right_foot"``).
        sole_frames: foot name -> frame ids of its sole points.
        joint_names: the actuated joints (the keys of the result).
        crouch: how far the base is lowered, as a fraction of its height above the feet at the
            zero posture (the knees bend to make up for it).
        posture: joint name -> angle (rad) the search starts from and pulls the joints towards
            (e.g. the arms down), the others 0; the feet stay as at the zero posture.
        iterations: most Gauss-Newton steps.
        tolerance: the feet and CoM errors (m, rad) the search stops at.

    Raises:
        RobotLoadError: no pose within 1e-6 of every target (the message gives the errors and asks
            for a ``stand`` pose in the config).
    """
    if not 0 <= crouch < 1:
        raise RobotLoadError(f"crouch must be in [0, 1), got {crouch!r}")
    data = model.createData()
    lo, hi = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
    q = pin.neutral(model)
    joints = [model.getJointId(n) for n in joint_names]
    iq = np.array([model.joints[j].idx_q for j in joints])
    iv = np.array([model.joints[j].idx_v for j in joints])
    q[iq] = np.clip(0.0, lo[iq], hi[iq])
    pin.framesForwardKinematics(model, data, q)  # the feet's targets: at the zero posture
    feet = list(foot_frames.values())
    # each foot where it is at the zero posture, its sole raised or lowered to the mean height
    # of the soles (descriptions are not exactly symmetric: iCub's differ by 2.4 um)
    sole_z = {
        n: float(np.mean([data.oMf[f].translation[2] for f in sole_frames[n]])) for n in foot_frames
    }
    targets = {}
    for n, f in foot_frames.items():
        targets[f] = data.oMf[f].copy()
        targets[f].translation[2] += np.mean(list(sole_z.values())) - sole_z[n]
    left, right = (data.oMf[foot_frames[n]].translation for n in ("left_foot", "right_foot"))
    lateral = np.array([*(left - right)[:2], 0.0])
    lateral /= np.linalg.norm(lateral)
    forward = np.cross(lateral, [0.0, 0.0, 1.0])
    feet_z = float(np.mean([data.oMf[f].translation[2] for f in feet]))
    base_z = float(q[2] - crouch * (q[2] - feet_z))
    com_xy = np.mean(
        [data.oMf[f].translation[:2] for n in foot_frames for f in sole_frames[n]], axis=0
    )
    knees = _knee_starts(model, data, q, feet, lateral, forward)
    index = dict(zip(joint_names, iq))
    for name, angle in (posture or {}).items():  # the reference the joints are pulled towards
        if name not in index:
            raise RobotLoadError(
                f"posture: unknown joint {name!r}; joints: {', '.join(joint_names)}"
            )
        q[index[name]] = np.clip(angle, lo[index[name]], hi[index[name]])
    q_zero = q.copy()
    for jid, angle in knees.items():  # the start: knees bent
        if model.names[jid] not in (posture or {}):
            q[model.joints[jid].idx_q] = angle
    q[2] = base_z
    # unknowns: base x, y (velocity entries 0, 1) and the joints; the base stays level at base_z
    cols = np.concatenate([[0, 1], iv])
    err = np.inf
    for _ in range(iterations):
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        rows, errs = [], []
        for f in feet:
            e = pin.log6(targets[f].actInv(data.oMf[f])).vector  # in the foot frame
            rows.append(pin.getFrameJacobian(model, data, f, pin.ReferenceFrame.LOCAL)[:, cols])
            errs.append(e)
        com = pin.centerOfMass(model, data, q, False)
        Jc = pin.jacobianCenterOfMass(model, data, q, False)
        rows.append(Jc[:2, cols])
        errs.append(com[:2] - com_xy)
        J, e = np.vstack(rows), np.concatenate(errs)
        err = float(np.abs(e).max())
        if err < tolerance:
            break
        dv = _step(
            J,
            e,
            -_POSTURE_GAIN * np.r_[0.0, 0.0, q[iq] - q_zero[iq]],
            np.r_[False, False, q[iq] <= lo[iq]],
            np.r_[False, False, q[iq] >= hi[iq]],
        )
        q[0:2] += dv[:2]
        q[iq] = np.clip(q[iq] + dv[2:], lo[iq], hi[iq])
    if not err < 1e-6:
        raise RobotLoadError(
            f"no stand pose found (feet flat, CoM over the feet): the targets "
            f"are missed by {err:.3g} (m, rad) after {iterations} steps; give "
            "one in the robot config (stand = {joint = angle, ...})"
        )
    return {name: float(q[i]) for name, i in zip(joint_names, iq)}
