"""The DCC plan replay's complementarity figure: the planner's accuracy (mean per-point ``h f_n``)
of a plan's knots, and the simulation's over the plan's horizon in the episode's summary."""

from __future__ import annotations

import numpy as np
import pytest

from wbsim.assets import PLANS_DIR
from wbsim.errors import WbsimError
from wbsim.planning.plan_file import complementarity_accuracy, load_plan
from wbsim.rollout import EpisodeConfig, run_episode


def test_complementarity_accuracy_hand_values():
    """mean over rows of sum_i max(h, 0) max(f, 0) / n: penetrations, pulls and NaN forces count
    as 0."""
    h = np.array([[0.001, 0.0, -0.002, 0.01], [0.002, 0.003, 0.0, 0.0]])
    f = np.array([[10.0, 50.0, 80.0, -3.0], [np.nan, 2.0, 40.0, 1.0]])
    # row 0: 0.001*10 = 0.01 -> /4; row 1: 0.003*2 = 0.006 -> /4
    assert complementarity_accuracy(h, f) == pytest.approx((0.01 / 4 + 0.006 / 4) / 2)
    assert np.isnan(complementarity_accuracy(np.zeros((0, 8)), np.zeros((0, 8))))
    with pytest.raises(WbsimError, match="must both be"):
        complementarity_accuracy(h, f[:, :3])


def test_plan_replay_summary_puts_the_simulated_h_fn_next_to_the_plans():
    """G1PlanReplay-v0 (step plan), 0.3 s: the summary's ``dcc_complementarity`` has the plan's own
    accuracy of its knots and the simulation's over the steps run so far (all inside the plan's
    4.5 s), sensed and commanded, finite and >= 0."""
    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1PlanReplay-v0", controller="projected_id", seconds=0.3, progress=False
        )
    )
    d = s["dcc_complementarity"]
    plan = load_plan(PLANS_DIR / "g1_dcc_step.npz")
    P, F = plan["point_positions"], plan["point_forces"]
    assert d["plan_file"] == "g1_dcc_step.npz"
    assert d["horizon_s"] == pytest.approx(float(plan["times"][-1]))
    assert d["plan_Nm"] == pytest.approx(complementarity_accuracy(P[..., 2], F[..., 2]))
    assert d["steps"] == 150
    for key in ("simulated_sensed_Nm", "simulated_commanded_Nm"):
        assert np.isfinite(d[key]) and d[key] >= 0.0
    # a stand has no plan: no such entry
    assert "dcc_complementarity" not in run_episode(
        EpisodeConfig(
            env="wbsim/G1Stand-v0", controller="projected_id", seconds=0.01, progress=False
        )
    )


@pytest.mark.parametrize("content", [b'{"times": [0, 1]}', b"garbage" * 10])
def test_a_file_that_is_no_plan_is_named_without_pickle_advice(tmp_path, content):
    """A JSON or a damaged .npz given as a plan: one line naming the file and what is expected;
    never numpy's advice to allow pickles (which would load untrusted code)."""
    from wbsim.errors import WbsimError

    path = tmp_path / "plan.npz"
    path.write_bytes(content)
    with pytest.raises(WbsimError, match="not a plan file") as info:
        load_plan(path)
    assert "wbsim dcc plan --out" in str(info.value) and "pickle" not in str(info.value)


def test_a_plan_for_another_robot_is_refused_at_reset():
    """The G1's step plan in G1PlanReplay-v0 with iCub put in (29 joints too): refused at reset,
    naming the plan, the robot and the first joint that differs, instead of iCub tracking the
    G1's joint angles column by column (it did: 2 rad joint errors, 24 cm CoM RMS, no error)."""
    from wbsim.envs import make_humanoid

    env = make_humanoid("wbsim/G1PlanReplay-v0", robot="icub", plan_file="step")
    with pytest.raises(WbsimError, match="g1_dcc_step.npz.*not for robot 'icub'.*l_hip_pitch"):
        env.reset(seed=0)
    env.close()


def test_a_cut_or_damaged_plan_file_is_named_not_a_traceback(tmp_path):
    """The shipped step plan cut in half (a copy interrupted) or with bytes flipped inside its
    compressed arrays: one ``WbsimError`` naming the file, not zipfile's ``BadZipFile`` or
    zlib's error."""
    data = (PLANS_DIR / "g1_dcc_step.npz").read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(WbsimError, match="cut.npz: not a plan file"):
        load_plan(cut)
    damaged = tmp_path / "damaged.npz"
    flipped = bytearray(data)
    for i in range(200, len(data) // 2, 997):  # inside the first arrays' compressed data
        flipped[i] ^= 0xFF
    damaged.write_bytes(bytes(flipped))
    with pytest.raises(WbsimError, match="damaged.npz: not a plan file"):
        load_plan(damaged)
