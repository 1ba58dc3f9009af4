"""run_episode's step table and summary against a slow reference recomputed in the test from MjData.

The loop's per-step code is written for speed (one gather for the log row, running maxima in blocks,
cached MjData views, the momentum residual without its intermediate calls). Here every column of
every logged row, and every summary figure, is recomputed the slow and obvious way from what the
simulation held at that step: MuJoCo's ``qpos``, ``subtree_com``, ``qacc``, ``xfrc_applied``,
``xipos`` and contacts (read with ``mj_contactForce``, not through the env's sensing), the
controller's command and the plan's schedule, looked up BY NAME (joint, point, foot), and the
centroidal momentum rate from Pinocchio with ``vdot = solve(T, qacc - Tdot v)``.
"""

import math

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from wbsim.controllers import controller_class
from wbsim.envs import humanoid
from wbsim.episode_log import load_run
from wbsim.recorder import StepRecorder
from wbsim.rollout import EpisodeConfig, run_episode

FEET = ("left_foot", "right_foot")


def _record(monkeypatch, controller):
    """Patch the controller's compute and the recorder's record (class level, so the loop's own
    calls are the ones recorded) to keep, per step, what the reference needs, read from MjData
    right after the step's physics."""
    steps = []
    cls = controller_class(controller)
    compute0 = cls.compute
    record0 = StepRecorder.record

    def compute(self, state, schedule):
        cmd = compute0(self, state, schedule)
        steps.append(
            {
                "q": state.q.copy(),
                "v": state.v.copy(),
                "t": float(state.t),
                "schedule": schedule,
                "cmd": cmd,
            }
        )
        return cmd

    def record(self, step, state, command, schedule, controller_time):
        d, m = self.sim.data, self.sim.model
        rec = steps[-1]
        root = m.body_rootid[self.sim.robot.feet["left_foot"].mj_body_id]
        contacts = []
        f6 = np.zeros(6)
        for i in range(d.ncon):
            c = d.contact[i]
            r1 = m.body_rootid[m.geom_bodyid[c.geom1]] == root
            r2 = m.body_rootid[m.geom_bodyid[c.geom2]] == root
            if r1 == r2:
                continue
            mujoco.mj_contactForce(m, d, i, f6)
            frame = c.frame.reshape(3, 3)
            sign = 1.0 if r2 else -1.0  # mj_contactForce: the force of geom1 on geom2
            contacts.append(
                (
                    c.pos.copy(),
                    sign * frame.T @ f6[:3],
                    sign * frame.T @ f6[3:],
                    int(c.geom2 if r2 else c.geom1),
                    float(c.dist),
                )
            )
        rec.update(
            t_after=float(d.time),
            qpos=d.qpos.copy(),
            qvel=d.qvel.copy(),
            com=d.subtree_com[1].copy(),
            qacc=d.qacc.copy(),
            xfrc=d.xfrc_applied.copy(),
            xipos=d.xipos.copy(),
            tau=self.sim.tau.copy(),
            sensing=self.sim.sensing(),
            site=d.site_xpos.copy(),
            contacts=contacts,
            robot_bodies=np.flatnonzero(m.body_rootid == root),
        )
        return record0(self, step, state, command, schedule, controller_time)

    monkeypatch.setattr(StepRecorder, "record", record)
    monkeypatch.setattr(cls, "compute", compute)
    return steps


def _reward(env, rec, fell):
    """The reward of a step, from the env's definition (module docstring), on the state after it."""
    qpos, qvel = rec["qpos"], rec["qvel"]
    w = env.reward_weights
    joints = (
        qpos[env.robot.converter.mj_qadr]
        - env.robot.pin_to_mj(env.q_reference)[0][env.robot.converter.mj_qadr]
    )
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, qpos[3:7] / np.linalg.norm(qpos[3:7]))
    u = rec["tau"] / env.effort
    return (
        (0.0 if fell else w["alive"])
        - w["upright"] * np.arccos(np.clip(R[8], -1, 1)) ** 2
        - w["posture"] * np.mean(joints**2)
        - w["torque"] * np.mean(u**2)
        - w["base_velocity"] * np.sum(qvel[0:3] ** 2)
    )


def _tilt_deg(quat_wxyz):
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, quat_wxyz / np.linalg.norm(quat_wxyz))
    return math.degrees(math.acos(np.clip(R[8], -1.0, 1.0)))


def _momentum_residual(robot, pdata, rec):
    """|dh_G/dt - sum of external wrenches - m g| / (m g), from scratch."""
    conv = robot.converter
    q, v = rec["q"], rec["v"]  # the state the step started from (the controller's)
    vdot = np.linalg.solve(conv.velocity_map(q), rec["qacc"] - conv.velocity_map_dot_times_v(q, v))
    dh = pin.computeCentroidalMomentumTimeVariation(robot.pin_model, pdata, q, v, vdot).vector
    c = pdata.com[0].copy()
    g = np.array(robot.mj_model.opt.gravity)
    force = robot.total_mass * g
    moment = np.zeros(3)
    for p, f, tq, _, _ in rec["contacts"]:
        force = force + f
        moment = moment + np.cross(p - c, f) + tq
    for b in rec["robot_bodies"]:
        xf = rec["xfrc"][b]
        force = force + xf[:3]
        moment = moment + np.cross(rec["xipos"][b] - c, xf[:3]) + xf[3:]
    res = dh - np.concatenate([force, moment])
    return np.linalg.norm(res) / (robot.total_mass * np.linalg.norm(g))


def _check_run(run, summary, steps, robot, env):
    """Every column of every row, and the summary, against the reference."""
    m = robot.mj_model
    cols = run.columns
    n = run.steps.shape[0]
    assert n == len(steps) == summary["steps"]
    col = {c: run[c] for c in cols}
    points = list(robot.contact_point_names)
    q0 = steps[0]["qpos0"]
    base0 = q0[0:3]
    pdata = robot.pin_model.createData()
    ref = {c: np.empty(n) for c in cols}
    tilts, drifts, drops, qerrs, residuals = [], [], [], [], []
    com_sq, swing, hold = [], [], []
    for k, rec in enumerate(steps):
        qpos, s, cmd, sch = rec["qpos"], rec["sensing"], rec["cmd"], rec["schedule"]
        r = {
            "t": rec["t"],
            "base_tilt_deg": _tilt_deg(qpos[3:7]),
            "phase_index": sch.phase_index,
            "feasible": float(cmd.feasible),
            "momentum_residual": _momentum_residual(robot, pdata, rec),
            "reward": _reward(env, rec, fell=summary["fell"] and k == n - 1),
        }
        rec["reward"] = r["reward"]
        # the contact forces and gaps of the sole points, from mj_contactForce and d.contact
        point_of_geom = {
            g: p for f in robot.feet.values() for g, p in zip(f.mj_geom_ids, f.point_names)
        }
        site_of = {
            p: sid for f in robot.feet.values() for sid, p in zip(f.mj_site_ids, f.point_names)
        }
        f_sim = {p: np.zeros(3) for p in robot.contact_point_names}
        gap = {p: rec["site"][site_of[p], 2] for p in robot.contact_point_names}  # floor at z = 0
        for _, f, _, g, dist in rec["contacts"]:
            if g in point_of_geom:
                f_sim[point_of_geom[g]] += f
                gap[point_of_geom[g]] = dist
        for i, a in enumerate(("x", "y", "z")):
            r[f"base_{a}"] = qpos[i]
            r[f"com_{a}"] = rec["com"][i]
            r[f"com_ref_{a}"] = sch.targets["com"][i] if "com" in sch.targets else np.nan
        for i, a in enumerate(("qw", "qx", "qy", "qz")):
            r[f"base_{a}"] = qpos[3 + i]
        # MuJoCo's state after the step, by name: the free joint's 7 + 6 entries, then each joint
        r["t_after"] = rec["t_after"]
        for i, a in enumerate(("x", "y", "z", "qw", "qx", "qy", "qz")):
            r[f"qpos/base_{a}"] = qpos[i]
        for i, a in enumerate(("vx", "vy", "vz", "wx", "wy", "wz")):
            r[f"qvel/base_{a}"] = rec["qvel"][i]
        for name in robot.joint_names:
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            r[f"qpos/{name}"] = qpos[m.jnt_qposadr[jid]]
            r[f"qvel/{name}"] = rec["qvel"][m.jnt_dofadr[jid]]
        push = sum(rec["xfrc"][b, 0:3] for b in range(len(rec["xfrc"])))  # N, world
        for i, a in enumerate("xyz"):
            r[f"push_{a}"] = push[i]
        sensed_names = list(s.names)
        W, F = cmd.foot_wrenches, cmd.point_forces  # NaN where not commanded
        # the feet the command assumed; the schedule's when it states neither a set nor a force
        assumed = (
            cmd.contact_set
            if cmd.contact_set or F is not None or W is not None
            else sch.contact_set
        )
        for foot in FEET:
            r[f"planned_{foot}"] = float(foot in sch.contact_set)
            r[f"assumed_{foot}"] = float(foot in assumed)
            r[f"sensed_{foot}"] = float(
                any(f_sim[p][2] > 0.5 for p in robot.foot(foot).point_names)
            )
            r[f"sole_min_z_{foot}"] = min(
                rec["site"][site_of[p], 2] for p in robot.foot(foot).point_names
            )
        for j, name in enumerate(robot.joint_names):
            adr = m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)]
            r[f"qerr/{name}"] = qpos[adr] - q0[adr]
            r[f"tau/{name}"] = rec["tau"][j]
            limit = robot.effort_limits[j]
            r[f"tau_applied/{name}"] = min(max(rec["tau"][j], -limit), limit)
        for f_i, foot in enumerate(robot.foot_names):
            for a, ax in enumerate(("fx", "fy", "fz", "tx", "ty", "tz")):
                r[f"w_cmd/{foot}/{ax}"] = np.nan if W is None else W[f_i, a]
        for p in points:
            i = sensed_names.index(p)
            for a, ax in enumerate("xyz"):
                r[f"f_cmd/{p}/{ax}"] = (
                    np.nan if F is None else F[robot.contact_point_names.index(p), a]
                )
                r[f"f_sim/{p}/{ax}"] = f_sim[p][a]
            r[f"gap/{p}"] = gap[p]
            r[f"mode/{p}"] = s.mode[i]
        for c in cols:
            if c != "controller_time_s":
                ref[c][k] = r[c]
        tilts.append(r["base_tilt_deg"])
        drifts.append(np.linalg.norm(qpos[0:3] - base0))
        drops.append(base0[2] - qpos[2])
        qerrs.append(max(abs(r[f"qerr/{j}"]) for j in robot.joint_names))
        residuals.append(r["momentum_residual"])
        if "com" in sch.targets:
            com_sq.append(float(np.sum((rec["com"] - sch.targets["com"]) ** 2)))
        for foot in FEET:
            if foot not in sch.contact_set:
                swing.append(r[f"sole_min_z_{foot}"])
                if sch.phase == "hold":
                    hold.append(r[f"sole_min_z_{foot}"])

    # the step table: bit for bit where the log only copies or subtracts, to rounding where the
    # reference takes another route (tilt from the rotation matrix, the momentum balance)
    # (MuJoCo adds the actuators' PD as ctrl + bias: the applied torque to round-off)
    approx = {
        "base_tilt_deg": 1e-6,
        "momentum_residual": 1e-9,
        "reward": 1e-12,
        **{c: 1e-9 for c in cols if c.startswith(("f_sim/", "tau_applied/"))},
    }
    for c in cols:
        if c == "controller_time_s":
            assert np.all(np.isfinite(col[c]) & (col[c] > 0) & (col[c] < 10)), c
        elif c in approx:
            np.testing.assert_allclose(col[c], ref[c], rtol=0, atol=approx[c], err_msg=c)
        else:
            np.testing.assert_array_equal(col[c], ref[c], err_msg=c)

    # the summary
    assert summary["max_base_tilt_deg"] == pytest.approx(max(tilts), abs=1e-6)
    assert summary["base_drift_m"] == pytest.approx(max(drifts), rel=1e-12, abs=1e-15)
    assert summary["base_height_drop_m"] == pytest.approx(
        max(0.0, max(drops)), rel=1e-12, abs=1e-15
    )
    assert summary["max_joint_error_rad"] == max(qerrs)
    assert summary["momentum_residual_max"] == pytest.approx(max(residuals), abs=1e-9)
    assert summary["momentum_residual_max"] == float(np.max(col["momentum_residual"]))
    assert summary["return"] == pytest.approx(sum(rec["reward"] for rec in steps), abs=1e-9)
    assert summary["seconds"] == round(steps[-1]["t_after"], 9)
    if com_sq:
        assert summary["com_tracking_rms_m"] == pytest.approx(math.sqrt(np.mean(com_sq)), rel=1e-12)
    else:
        assert "com_tracking_rms_m" not in summary
    if swing:
        assert summary["swing_clearance_max_m"] == max(swing)
    else:
        assert "swing_clearance_max_m" not in summary
    if hold:
        assert summary["swing_clearance_min_hold_m"] == min(hold)
    else:
        assert "swing_clearance_min_hold_m" not in summary
    # the events on disk and the counts agree
    for kind, count in summary["events"].items():
        assert sum(1 for e in run.events if e["kind"] == kind) == count, kind


def _run(monkeypatch, tmp_path, **kw):
    import wbsim

    steps = _record(monkeypatch, kw.get("controller", "gravity_qp"))
    reset0 = humanoid.HumanoidEnv.reset
    envs = []

    def reset(self, *, seed=None, options=None):
        out = reset0(self, seed=seed, options=options)
        envs.append(self)
        steps.append({"qpos0": self.data.qpos.copy()})
        return out

    monkeypatch.setattr(humanoid.HumanoidEnv, "reset", reset)
    summary = run_episode(EpisodeConfig(log=tmp_path / "run", progress=False, **kw))
    qpos0 = steps.pop(0)["qpos0"]
    steps[0]["qpos0"] = qpos0
    robot = wbsim.load_robot(summary["robot"])
    return load_run(tmp_path / "run"), summary, steps, robot, envs[0]


def test_standing_with_pushes_matches_the_reference(monkeypatch, tmp_path):
    """gravity_qp, every sole point commanded (the row's fast path), pushes on the torso every
    0.1 s (xfrc_applied enters the momentum balance)."""
    run, summary, steps, robot, env = _run(
        monkeypatch,
        tmp_path,
        env="wbsim/G1Push-v0",
        controller="gravity_qp",
        seconds=0.5,
        env_options={"push_interval": 0.1, "push_magnitude": 30.0},
    )
    assert summary["status"] == "completed"
    assert any(np.count_nonzero(rec["xfrc"]) for rec in steps)
    _check_run(run, summary, steps, robot, env)
    # the pushes: their start times and forces in the summary, the force acting in the log
    assert [p["t"] for p in summary["pushes"]] == pytest.approx([0.1, 0.2, 0.3, 0.4], abs=1e-9)
    for p in summary["pushes"]:
        assert np.linalg.norm(p["force"]) == pytest.approx(30.0) and p["force"][2] == 0.0
        assert p["duration"] == 0.1 and p["impulse"] == pytest.approx(3.0)
    pushing = np.hypot(run["push_x"], run["push_y"])
    assert set(np.round(pushing, 9)) == {0.0, 30.0}


@pytest.mark.slow
def test_one_leg_matches_the_reference(monkeypatch, tmp_path):
    """projected_id on one leg: the CoM target, commands on a subset of the points (the row's
    scatter path), a swing foot and a hold phase."""
    run, summary, steps, robot, env = _run(
        monkeypatch,
        tmp_path,
        env="wbsim/G1OneLeg-v0",
        controller="projected_id",
        controller_options={"variant": "qp"},
        seconds=3.6,
    )
    assert summary["status"] == "completed"
    sets = {rec["cmd"].contact_set for rec in steps}
    assert len(sets) > 1  # a foot was lifted
    assert any(rec["schedule"].phase == "hold" for rec in steps)
    _check_run(run, summary, steps, robot, env)


def test_wrench_commands_match_the_reference(monkeypatch, tmp_path):
    """gravity_qp with the wrench contact model: the command is a wrench per foot, so the points'
    f_cmd columns are NaN (not a commanded 0 N) and the w_cmd columns hold the wrenches."""
    run, summary, steps, robot, env = _run(
        monkeypatch,
        tmp_path,
        controller="gravity_qp",
        seconds=0.2,
        controller_options={"contact_model": "wrench"},
    )
    assert summary["status"] == "completed"
    assert all(
        rec["cmd"].foot_wrenches.shape == (2, 6) and rec["cmd"].point_forces is None
        for rec in steps
    )
    _check_run(run, summary, steps, robot, env)
    assert np.all(np.isnan(run.prefixed("f_cmd/")[1]))
    _, w = run.prefixed("w_cmd/left_foot/")
    assert np.all(w[:, 2] > 100.0)  # about half the G1's weight on each foot, N
    # the report plots the wrench's normal force as the foot's commanded one
    from wbsim.report import foot_normal_force

    assert np.array_equal(foot_normal_force(run, "left_foot", "f_cmd"), w[:, 2])
    names, f = run.prefixed("f_sim/left_foot_")
    assert np.array_equal(
        foot_normal_force(run, "left_foot", "f_sim"),
        f[:, [i for i, n in enumerate(names) if n.endswith("/z")]].sum(axis=1),
    )


def test_a_fall_matches_the_reference(monkeypatch, tmp_path):
    """PD alone: the robot falls (the last row is the fall's step; drop and tilt grow)."""
    run, summary, steps, robot, env = _run(monkeypatch, tmp_path, controller="pd", seconds=2.5)
    assert summary["fell"]
    _check_run(run, summary, steps, robot, env)
    # the fall is stamped with its step's start, as every event; the state judged fallen is the
    # one after that step, where the run stops: its detail's t_after is the run's length
    (fall,) = [e for e in run.events if e["kind"] == "fall"]
    assert fall["t"] == run["t"][-1] and fall["step"] == summary["steps"] - 1
    assert fall["detail"]["t_after"] == run["t_after"][-1]
    assert fall["detail"]["t_after"] == pytest.approx(summary["seconds"], abs=1e-9)  # (rounded)


def test_seconds_default_to_the_env_time_limit(monkeypatch):
    """``EpisodeConfig.seconds`` unset runs the env's time limit (as ``wbsim run`` without
    ``--seconds``), not a fixed 10 s."""
    import wbsim.envs

    asked = []

    def short_limit(env_id):
        asked.append(env_id)
        return 0.02

    monkeypatch.setattr(wbsim.envs, "time_limit", short_limit)
    summary = run_episode(EpisodeConfig(env="wbsim/G1OneLeg-v0", progress=False))
    assert asked == ["wbsim/G1OneLeg-v0"]
    assert summary["seconds"] == pytest.approx(0.02)


def test_invalid_command_fast_and_slow_paths_agree():
    """``_invalid_command`` answers the common case (float64 arrays of the right shape, finite
    sum) in a few calls and looks closer otherwise: a NaN or an infinity in any of the five
    arrays is found and named, other dtypes, lists and sums that overflow are accepted when every
    entry is a finite number, wrong shapes and text are refused."""
    from wbsim.rollout import _invalid_command
    from wbsim.types import Command, JointTargets

    names = ("a", "b", "c")

    def cmd(tau=None, **jt):
        tau = np.zeros(3) if tau is None else tau
        if not jt:
            return Command(tau)
        fields = {k: jt.get(k, np.ones(3)) for k in ("q", "v", "kp", "kd")}
        return Command(tau, joint_targets=JointTargets(**fields))

    assert _invalid_command(cmd(), names) is None
    assert _invalid_command(cmd(q=np.zeros(3)), names) is None
    nan_tau = cmd(np.array([0.0, np.nan, 1.0]))
    assert _invalid_command(nan_tau, names) == ("non-finite torque", ["b"])
    for field, what in (
        ("q", "joint target"),
        ("v", "joint target velocity"),
        ("kp", "PD kp"),
        ("kd", "PD kd"),
    ):
        bad = cmd(**{field: np.array([1.0, 2.0, np.inf])})
        assert _invalid_command(bad, names) == (f"non-finite {what}", ["c"])
    # entries whose squares sum past the fast test, float32, a list: valid, through the closer look
    assert _invalid_command(cmd(np.array([9e9, 9e9, 0.0])), names) is None
    assert _invalid_command(cmd(np.zeros(3, dtype=np.float32)), names) is None
    assert _invalid_command(cmd([0.0, 1.0, 2.0]), names) is None
    # MuJoCo zeroes every control at mjMAXVAL and beyond: refused, naming the joints
    assert mujoco.mjMAXVAL == 1e10
    for big in (1e10, -1e12, 1e300):
        huge = cmd(np.array([0.0, big, 1.0]))
        assert _invalid_command(huge, names) == (
            "torque of 1e+10 or more (MuJoCo would set every control to 0)",
            ["b"],
        )
    assert _invalid_command(cmd(kd=np.array([1.0, 1e11, 1e11])), names)[1] == ["b", "c"]
    assert _invalid_command(cmd(np.zeros(4)), names) == ("torque of shape (4,) (expected (3,))", [])
    assert _invalid_command(cmd(kp="abc"), names) == ("non-numeric PD kp", [])
    assert _invalid_command(np.zeros(3), names)[0].startswith("value of type ndarray")
