"""The G1's kinematics in CasADi (adam-robotics) for the planner, and their check against Pinocchio.

Owns: the URDF fix-ups adam needs (done on a copy in a temporary folder), the CasADi functions of
the sole points, the CoM and the centroidal momentum, and :func:`pinocchio_reference`, the same
quantities from Pinocchio (``wbsim.load_robot``'s model) for tests and plan checks.

Conventions (also those of the planner and the plan file): base pose ``p_B`` (world, m) and unit
quaternion ``rho = (w, x, y, z)``; base velocity in adam's *mixed* representation: ``v_B`` the
world-frame velocity of the base origin (m/s) and ``omega`` the world-frame angular velocity
(rad/s); joint order :attr:`wbsim.Robot.joint_names`; momentum ``h = [h_p; h_omega]`` at the CoM,
world orientation (kg m/s, kg m²/s), as Pinocchio's ``data.hg``.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wbsim.errors import WbsimError

__all__ = [
    "G1Kinematics",
    "adam_urdf_text",
    "load_kinematics",
    "pinocchio_reference",
    "quat_to_rot",
]


def quat_to_rot(rho):
    """Rotation matrix ``(3, 3)`` of a quaternion ``rho = (w, x, y, z)`` (numpy or CasADi).

    The unnormalised form ``R = (w² - |v|²) I + 2 v v^T + 2 w [v]x`` divided by ``|rho|²`` is not
    used: the planner constrains ``|rho| = 1``, so the homogeneous form below is exact there.
    """
    w, x, y, z = rho[0], rho[1], rho[2], rho[3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    if type(w).__module__.startswith("casadi"):  # numpy needs no CasADi (the [plan] extra)
        import casadi as ca

        return ca.vertcat(*[ca.horzcat(*r) for r in rows])
    return np.array(rows, dtype=float)


def adam_urdf_text(urdf_text: str) -> str:
    """The G1 URDF as adam's parser takes it: the ``world`` link and its ``floating`` joint removed
    (the planner's free base is the root link's pose), and every joint without ``<origin>`` given
    the identity origin (adam's parser fails on a missing origin)."""
    text = re.sub(
        r"<joint\b[^>]*type=\"floating\"[^>]*>.*?</joint>", "", urdf_text, flags=re.DOTALL
    )
    text = re.sub(r"<link\s+name=\"world\"\s*/>", "", text)
    text = re.sub(r"<link\s+name=\"world\"\s*>\s*</link>", "", text)

    def add_origin(m: re.Match) -> str:
        body = m.group(0)
        if "<origin" in body:
            return body
        return re.sub(r"(<joint\b[^>]*>)", r'\1<origin xyz="0 0 0" rpy="0 0 0"/>', body, count=1)

    return re.sub(r"<joint\b[^>]*>.*?</joint>", add_origin, text, flags=re.DOTALL)


@dataclass
class G1Kinematics:
    """CasADi functions of a humanoid with 8 sole points (4 per foot), from adam.

    Attributes:
        joint_names: joint order of ``s``. n_joints: its length. mass: total mass, kg.
        point_names: the 8 sole points, left foot first (:attr:`wbsim.Robot.contact_point_names`).
        points_in_foot: ``(2, 4, 3)`` point positions in their foot link, m.
        foot_links: the two foot links (left, right).
        feet: ``F(p_B (3), rho (4), s (n)) -> (P (3, 8), R_left (3, 3), R_right (3, 3))``: the
            points in the world, m, and the foot orientations (adam ``forward_kinematics_fun``).
        com: ``F(p_B, rho, s) -> x (3)``, world, m (adam ``CoM_position_fun``).
        cmm: ``F(p_B, rho, s) -> J_CMM (6, 6 + n)`` such that ``h = J_CMM [v_B; omega; sdot]``
            (adam ``centroidal_momentum_matrix_fun``, mixed representation).
    """

    joint_names: tuple[str, ...]
    n_joints: int
    mass: float
    point_names: tuple[str, ...]
    points_in_foot: np.ndarray
    foot_links: tuple[str, str]
    feet: Any
    com: Any
    cmm: Any

    def base_transform(self, p_B, rho):
        """``H_B (4, 4)`` from base position and quaternion (CasADi)."""
        import casadi as ca

        R = quat_to_rot(rho)
        return ca.vertcat(ca.horzcat(R, ca.reshape(p_B, 3, 1)), ca.horzcat(0, 0, 0, 1))

    def momentum(self, p_B, rho, s, v_B, omega, s_dot):
        """``h (6,) = J_CMM(q) [v_B; omega; sdot]`` (CasADi or numbers)."""
        import casadi as ca

        return ca.mtimes(self.cmm(p_B, rho, s), ca.vertcat(v_B, omega, s_dot))


def load_kinematics(robot=None) -> G1Kinematics:
    """Build the CasADi kinematics of ``robot`` (default ``wbsim.load_robot("g1")``) from the same
    URDF, with adam. The fixed URDF goes to a temporary folder, deleted when done.

    Raises:
        WbsimError: casadi / adam-robotics missing (the ``plan`` extra), or adam cannot parse the
            description.
    """
    try:
        import casadi as ca
        from adam.casadi import KinDynComputations
    except ImportError as exc:
        raise WbsimError(
            f"wbsim.planning needs the 'plan' extra (pip install 'wbsim[plan]'): {exc}"
        ) from None
    import wbsim
    from wbsim.robot import _read_description

    robot = robot if robot is not None else wbsim.load_robot("g1")
    _, urdf_text = _read_description(robot.config)
    with tempfile.TemporaryDirectory(prefix="wbsim_adam_") as tmp:
        path = Path(tmp) / "robot.urdf"
        path.write_text(adam_urdf_text(urdf_text))
        try:
            kd = KinDynComputations(str(path), list(robot.joint_names))
        except Exception as exc:  # adam raises several types on a bad description
            raise WbsimError(f"adam cannot load {robot.name}'s URDF: {exc}") from exc
    n = len(robot.joint_names)
    feet = [robot.foot("left_foot"), robot.foot("right_foot")]
    p_B, rho, s = ca.SX.sym("p_B", 3), ca.SX.sym("rho", 4), ca.SX.sym("s", n)
    R = quat_to_rot(rho)
    H = ca.vertcat(ca.horzcat(R, p_B), ca.horzcat(0, 0, 0, 1))
    pts, rots = [], []
    for foot in feet:
        Hf = kd.forward_kinematics_fun(foot.link)(H, s)
        rots.append(Hf[:3, :3])
        for c in foot.points_in_foot:
            pts.append(Hf[:3, 3] + ca.mtimes(Hf[:3, :3], ca.DM(c)))
    opts = {"cse": True}
    feet_fun = ca.Function(
        "feet",
        [p_B, rho, s],
        [ca.horzcat(*pts), rots[0], rots[1]],
        ["p_B", "rho", "s"],
        ["P", "R_left", "R_right"],
        opts,
    )
    com_fun = ca.Function(
        "com", [p_B, rho, s], [kd.CoM_position_fun()(H, s)], ["p_B", "rho", "s"], ["x"], opts
    )
    cmm_fun = ca.Function(
        "cmm",
        [p_B, rho, s],
        [kd.centroidal_momentum_matrix_fun()(H, s)],
        ["p_B", "rho", "s"],
        ["J_CMM"],
        opts,
    )
    return G1Kinematics(
        joint_names=tuple(robot.joint_names),
        n_joints=n,
        mass=float(robot.total_mass),
        point_names=tuple(robot.contact_point_names),
        points_in_foot=np.array([f.points_in_foot for f in feet]),
        foot_links=(feet[0].link, feet[1].link),
        feet=feet_fun,
        com=com_fun,
        cmm=cmm_fun,
    )


def pinocchio_reference(robot, p_B, rho, s, v_B=None, omega=None, s_dot=None) -> dict[str, Any]:
    """The planner's kinematic quantities from Pinocchio, for checks.

    Args:
        robot: a :class:`wbsim.Robot` (its ``pin_model``). p_B: ``(3,)`` m. rho: ``(4,)``
            ``(w, x, y, z)``, normalised here. s: ``(n,)`` rad, :attr:`wbsim.Robot.joint_names`
            order. v_B, omega: ``(3,)`` world-frame base velocity (m/s) and angular velocity
            (rad/s). s_dot: ``(n,)`` rad/s. Without velocities, ``h`` is not computed.

    Returns:
        ``points (8, 3)`` (``pin.updateFramePlacements``), ``com (3,)`` (``pin.centerOfMass``),
        ``h (6,)`` (``pin.computeCentroidalMomentum``, ``data.hg``: linear then angular).
    """
    import pinocchio as pin

    model = robot.pin_model
    data = model.createData()
    rho = np.asarray(rho, float) / np.linalg.norm(rho)
    joints = dict(zip(robot.joint_names, np.asarray(s, float)))
    q = robot.configuration(np.asarray(p_B, float), rho, joints)
    pin.framesForwardKinematics(model, data, q)
    points = np.array(
        [data.oMf[model.getFrameId(n)].translation for n in robot.contact_point_names]
    )
    com = pin.centerOfMass(model, data, q)
    out: dict[str, Any] = {"points": points, "com": np.array(com), "q": q}
    if v_B is not None:
        R = quat_to_rot(rho)
        v = np.zeros(model.nv)
        v[0:3] = R.T @ np.asarray(v_B, float)  # Pinocchio's free-flyer velocity is local
        v[3:6] = R.T @ np.asarray(omega, float)
        idx = {name: model.joints[model.getJointId(name)].idx_v for name in robot.joint_names}
        for name, value in zip(robot.joint_names, np.asarray(s_dot, float)):
            v[idx[name]] = value
        hg = pin.computeCentroidalMomentum(model, data, q, v)
        out["h"] = np.concatenate([hg.linear, hg.angular])
        out["v"] = v
    return out
