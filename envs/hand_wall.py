"""The hand-on-a-wall scenario (``wbsim/G1HandWall-v0``): a G1 with hands beside a wall, the back of
its right hand on it, leans towards the wall and lifts its left foot.

Owns the scenario's robot configuration (:func:`g1_hand_wall_config`: the G1 with its Dex3 hands,
fingers locked, the right hand's contact patch, the scene with the wall, the reset pose) and its
contact plan (:func:`hand_wall_plan`). The contact is the flat back of the hand: the palm side
carries the thumb, whose links stand up to 3 cm proud of the palm (``docs/controllers.md``,
"Multi-contact").
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from wbsim.envs.schedules import BOTH_FEET, Phase, PhasePlan, _lerp, foot_lift_targets
from wbsim.robot_config import ROBOTS, ContactConfig, RobotConfig

__all__ = [
    "HAND_CONTACTS",
    "HAND_CORNERS",
    "LEAN_POSE",
    "WALL_Y",
    "g1_hand_wall_config",
    "hand_wall_plan",
]

#: The wall of ``assets/scene_wall.xml``: the plane ``y = WALL_Y`` (m), facing +y.
WALL_Y = -0.45
#: The back of the right Dex3 hand: four points (m) of ``right_hand_palm_link`` (5.5 cm along
#: the fingers, 6.6 cm across), in :data:`~wbsim.robot_config.CORNER_NAMES` order (front: towards
#: the fingers; left: +z), on the plane ``y = -0.0275``: 6.5 mm over the flat back of the hand
#: (``y = -0.021``), 2 mm clear of the wrist pitch link's collision hull (``y >= -0.0255`` for
#: any wrist pitch, and any yaw above 0.5 rad), which would otherwise touch the wall first.
HAND_CORNERS = (
    (0.070, -0.0275, 0.033),
    (0.015, -0.0275, 0.033),
    (0.015, -0.0275, -0.033),
    (0.070, -0.0275, -0.033),
)
#: The reset pose (rad): the G1's stand pose (legs, waist, left arm) with the right arm reaching
#: the wall, the back of the hand flat on it (fingers pointing forwards and down). Found by
#: damped Gauss-Newton on the right arm's 7 joints (``tests/test_multi_contact.py`` checks that
#: the hand's points lie on the wall).
LEAN_POSE: Mapping[str, float] = MappingProxyType(
    {
        "left_hip_pitch_joint": -0.3616329598390816,
        "left_hip_roll_joint": 0.0001640286938783151,
        "left_hip_yaw_joint": -9.755222268260005e-05,
        "left_knee_joint": 0.6904466193995205,
        "left_ankle_pitch_joint": -0.32881366756112074,
        "left_ankle_roll_joint": -0.0001908450900883726,
        "right_hip_pitch_joint": -0.36163642185091743,
        "right_hip_roll_joint": 0.00016402843272233635,
        "right_hip_yaw_joint": -9.75528360909803e-05,
        "right_knee_joint": 0.6904539200412395,
        "right_ankle_pitch_joint": -0.32881750619104144,
        "right_ankle_roll_joint": -0.00019084517917892545,
        "waist_yaw_joint": 5.281994649044582e-06,
        "waist_roll_joint": -0.00018920953183411253,
        "waist_pitch_joint": 0.04580669356130232,
        "left_shoulder_pitch_joint": -0.011860922676270707,
        "left_shoulder_roll_joint": 9.061115854979176e-05,
        "left_shoulder_yaw_joint": 7.244678065342427e-05,
        "left_elbow_joint": -0.0006068000156757143,
        "left_wrist_roll_joint": -2.2605577110603634e-06,
        "left_wrist_pitch_joint": -8.574454050143838e-05,
        "left_wrist_yaw_joint": 7.959304499687497e-05,
        "right_shoulder_pitch_joint": 0.6579476761796894,
        "right_shoulder_roll_joint": -0.6478542110118518,
        "right_shoulder_yaw_joint": -0.8160093312771043,
        "right_elbow_joint": 0.38046360027944004,
        "right_wrist_roll_joint": 0.5532601946054435,
        "right_wrist_pitch_joint": -0.02329839375896352,
        "right_wrist_yaw_joint": 1.0449850323185936,
    }
)


@functools.cache
def g1_hand_wall_config() -> RobotConfig:
    """The :class:`~wbsim.robot_config.RobotConfig` of the scenario: ``ROBOTS["g1_hands"]`` with
    the 14 finger joints locked straight (their links fixed to the palm), the right hand's contact
    patch on ``"wall"`` (:data:`HAND_CORNERS`, outward normal ``-y`` of the palm link), the scene
    ``scene_wall.xml`` and the pose ``"lean"`` (:data:`LEAN_POSE`)."""
    base = ROBOTS["g1_hands"]
    fingers = ("thumb_0", "thumb_1", "thumb_2", "middle_0", "middle_1", "index_0", "index_1")
    locked = {f"{side}_hand_{f}_joint": 0.0 for side in ("left", "right") for f in fingers}
    hand = ContactConfig(
        "right_hand_palm_link", HAND_CORNERS, normal=(0.0, -1.0, 0.0), surface="wall"
    )
    return dataclasses.replace(
        base,
        name="g1_hand_wall",
        locked_joints=locked,
        hands={"right_hand": hand},
        scene="scene_wall.xml",
        poses={**base.poses, "lean": dict(LEAN_POSE)},
    )


#: The contacts of the scenario's phases: both feet and the right hand, then the left foot and
#: the right hand.
HAND_CONTACTS = BOTH_FEET | {"right_hand"}


def hand_wall_plan(
    lean: float = 0.06, lift_height: float = 0.05, shift_time: float = 2.0, lift_time: float = 1.0
) -> PhasePlan:
    """Lean on the wall and lift the right foot: stand 0.5 s (both feet and the right hand, on the
    wall from the start), shift the CoM (``shift_time`` s) to ``lean`` m from the left sole centre
    towards the wall (-y), lift the right foot ``lift_height`` m (``lift_time`` s, quintic; the
    left foot and the hand in contact), then hold it there (open-ended).

    With the default 6 cm the CoM stands 3-3.5 cm beyond the left sole's wall-side edge (its
    half-width is 2.5-3 cm): without the hand the robot would tip towards the wall; the hand
    holds ~30 N against it (docs/controllers.md, "Multi-contact").

    Targets: ``"com"`` (world CoM, m) and ``"right_foot"`` (world position of the right foot link
    origin, m), with their velocities (:meth:`PhasePlan.at`). Context (set by the env at reset):
    ``com``, ``left_sole_centre``, ``right_foot``.
    """

    def leaning(c):
        centre = c["left_sole_centre"]
        return np.array([centre[0], centre[1] - lean, c["com"][2]])

    def com_stand(s, c):
        return c["com"].copy()

    def com_shift(s, c):
        return _lerp(c["com"], leaning(c), s)

    def com_lean(s, c):
        return leaning(c)

    foot_rest, foot_up, foot_hold = foot_lift_targets("right_foot", lift_height)

    stance = frozenset({"left_foot", "right_hand"})
    return PhasePlan(
        [
            Phase("stand", 0.5, HAND_CONTACTS, {"com": com_stand, "right_foot": foot_rest}),
            Phase("shift", shift_time, HAND_CONTACTS, {"com": com_shift, "right_foot": foot_rest}),
            Phase("lift", lift_time, stance, {"com": com_lean, "right_foot": foot_up}),
            Phase("hold", float("inf"), stance, {"com": com_lean, "right_foot": foot_hold}),
        ]
    )
