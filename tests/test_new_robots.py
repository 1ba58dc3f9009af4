"""Robots from a path and a small config: iCub, Romeo and the G1 with hands (example-robot-data),
MuJoCo Menagerie's G1, H1 and OP3 where robot_descriptions' cache holds them; through the whole
pipeline (parity, stand pose, controllers, envs, log, video, pickling, vector envs)."""

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pinocchio as pin
import pytest

import wbsim
from wbsim.errors import RobotLoadError, UnknownNameError, WbsimError
from wbsim.parity import check_models
from wbsim.robot_config import CORNER_NAMES, ROBOT_CONFIG_DIR, RobotConfig

ERD = wbsim.robot.example_robot_data_dir()
NEW = ["icub", "romeo", "g1_hands"]


@pytest.fixture(scope="module", params=NEW)
def new_robot(request):
    return wbsim.load_robot(request.param)


def test_configs_are_short():
    for path in ROBOT_CONFIG_DIR.glob("*.toml"):
        assert len(path.read_text().splitlines()) <= 10, path


def test_parity_at_random_states(new_robot):
    """MuJoCo and Pinocchio agree to 1e-8 (relative) at 30 random states beyond the 5 of the load:
    mass, bodies, limits, mass matrix, gravity (wbsim.parity.check_models raises otherwise)."""
    r = new_robot
    check_models(r.name, r.mj_model, r.pin_model, r.converter, r.joint_limits, n_states=30, seed=11)
    # and with velocities: the bias forces (Coriolis, centrifugal, gravity), as for the G1
    import mujoco
    from conftest import random_state

    rng = np.random.default_rng(12)
    data, pdata = mujoco.MjData(r.mj_model), r.pin_model.createData()
    M = np.zeros((r.mj_model.nv, r.mj_model.nv))
    for _ in range(20):
        q, v = random_state(r, rng)
        data.qpos[:], data.qvel[:] = r.pin_to_mj(q, v)
        mujoco.mj_forward(r.mj_model, data)
        mujoco.mj_fullM(r.mj_model, data, M)
        b_pin = pin.nonLinearEffects(r.pin_model, pdata, q, v)
        b_mj = r.converter.mj_bias_to_pin(data.qfrc_bias.copy(), M, q, v)
        assert np.linalg.norm(b_mj - b_pin) < 1e-8 * np.linalg.norm(b_pin)


def test_stand_pose_found_feet_flat_knees_bent_com_over_the_feet(new_robot):
    """Checked with Pinocchio alone, from the pose's joints: every sole point on the floor
    (flat feet), the CoM above the middle of the sole points, both knees bent, the base lower
    than at the zero posture."""
    r = new_robot
    model, data = r.pin_model, r.pin_model.createData()
    q = r.pose_q("stand")
    pin.framesForwardKinematics(model, data, q)
    points = np.array([data.oMf[model.getFrameId(n)].translation for n in r.contact_point_names])
    np.testing.assert_allclose(points[:, 2], 0.0, atol=1e-9)
    com = pin.centerOfMass(model, data, q)
    np.testing.assert_allclose(com[:2], points[:, :2].mean(axis=0), atol=1e-6)
    knees = [n for n in r.joint_names if "knee" in n.lower()]
    assert len(knees) == 2 and all(abs(r.pose("stand").joints[k]) > 0.2 for k in knees)
    q0 = r.configuration(joints={})
    q0 = r.on_floor(q0)
    assert q[2] < q0[2] - 0.01
    # every robot faces +x at its stand pose (iCub's base frame faces -x: its base is turned)
    left = data.oMf[r.foot("left_foot").pin_frame_id].translation
    right = data.oMf[r.foot("right_foot").pin_frame_id].translation
    assert left[1] - right[1] > 0.05 and abs(left[0] - right[0]) < 1e-3
    # the config's posture (Romeo's arms down) is where the search started and pulled to
    for joint, angle in r.config.stand_posture.items():
        assert r.pose("stand").joints[joint] == pytest.approx(angle, abs=0.05)


def test_icub_soles_from_its_collada_collision_meshes():
    """iCub's sole corners against an independent computation: the foot's COLLADA collision mesh
    read with trimesh (COLLADA's y up turned to z up), placed by the URDF's collision origin and
    the l_foot -> l_sole joint (Pinocchio), its bounding box bottom in the l_sole frame."""
    import trimesh

    robot = wbsim.load_robot("icub")
    mesh = trimesh.load(
        ERD / "icub_description/meshes/upmc/collision/icub_simple_collision_l_foot.dae",
        force="mesh",
    )
    y_up = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    collision = pin.SE3(pin.rpy.rpyToMatrix(0, 1.5708, 1.5708), np.array([-0.008, 0, -0.0553]))
    model = robot.pin_model
    sole = model.frames[model.getFrameId("l_sole")].placement  # in the joint frame
    foot = model.frames[model.getFrameId("l_foot")].placement
    in_sole = (sole.inverse() * foot * collision).act
    pts = np.array([in_sole(v) for v in mesh.vertices @ y_up.T])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    expected = [
        [hi[0], hi[1], lo[2]],
        [lo[0], hi[1], lo[2]],
        [lo[0], lo[1], lo[2]],
        [hi[0], lo[1], lo[2]],
    ]
    # to 10 um: wbsim takes the box with the world's axes at the zero posture, where iCub's
    # l_sole is tilted by 4e-6 rad (the URDF's rpy 1.5708 for pi/2): 5 um over the foot
    np.testing.assert_allclose(robot.foot("left_foot").points_in_foot, expected, atol=1e-5)
    length, width = hi[0] - lo[0], hi[1] - lo[1]
    assert 0.14 < length < 0.17 and 0.05 < width < 0.07  # an iCub foot, along its x axis


def test_sole_spheres_touch_the_floor_at_the_stand_pose(new_robot):
    """In MuJoCo: every sole sphere's lowest point at z = 0 at the stand pose (the sphere sits
    above its corner, whichever way the foot link's axes point)."""
    r = new_robot
    data = r.make_data("stand")
    for foot in r.feet.values():
        for g in foot.mj_geom_ids:
            assert data.geom_xpos[g][2] - r.mj_model.geom_size[g][0] == pytest.approx(0, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["wbsim/ICubStand-v0", "wbsim/RomeoStand-v0"])
def test_registered_robots_stand_10s_on_gravity_qp(env_id):
    from wbsim.rollout import EpisodeConfig, run_episode

    s = run_episode(
        EpisodeConfig(env=env_id, controller="gravity_qp", seconds=10.0, progress=False)
    )
    assert s["status"] == "completed" and not s["fell"]
    assert s["base_drift_m"] < 2e-3 and s["max_base_tilt_deg"] < 0.5
    assert s["events"]["force_sign"] == 0 and s["events"].get("fall", 0) == 0


def test_cli_robot_from_a_path_and_a_config(tmp_path):
    """`wbsim run --robot PATH.urdf --robot-config CFG.toml`: two lines of config, the rest found;
    log, video and events as for a built-in robot."""
    cfg = tmp_path / "feet.toml"
    cfg.write_text('feet = { left_foot = "l_sole", right_foot = "r_sole" }\ntorso = "chest"\n')
    urdf = ERD / "icub_description/robots/icub_reduced.urdf"
    run, video = tmp_path / "run", tmp_path / "icub.mp4"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wbsim.cli",
            "run",
            "--robot",
            str(urdf),
            "--robot-config",
            str(cfg),
            "--seconds",
            "1",
            "--log",
            str(run),
            "--video",
            str(video),
            "--width",
            "160",
            "--height",
            "120",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["robot"] == "icub_reduced" and summary["status"] == "completed"
    assert summary["base_drift_m"] < 1e-3 and summary["video_frames"] == 31
    config = json.loads((run / "config.json").read_text())
    assert config["robot_config"]["feet"]["left_foot"]["link"] == "l_sole"
    assert "stand" in config["robot_config"]["poses"]  # the found pose, logged
    assert video.stat().st_size > 0 and (run / "events.jsonl").is_file()


def test_env_option_robot_in_run_episode(tmp_path):
    from wbsim.rollout import EpisodeConfig, run_episode

    s = run_episode(
        EpisodeConfig(
            env="wbsim/G1Stand-v0",
            seconds=0.2,
            progress=False,
            env_options={"robot": str(ROBOT_CONFIG_DIR / "romeo.toml")},
        )
    )
    assert s["robot"] == "romeo" and s["status"] == "completed"
    urdf = ERD / "romeo_description/urdf/romeo_small.urdf"
    with pytest.raises(WbsimError, match="no feet configured"):  # nothing to sense: refused
        run_episode(
            EpisodeConfig(seconds=0.2, env_options={"robot": str(urdf)}, log=tmp_path / "run")
        )
    assert not (tmp_path / "run").exists()
    with pytest.raises(UnknownNameError, match="icub.*romeo"):
        run_episode(EpisodeConfig(seconds=0.2, env_options={"robot": "asimo"}))


def test_custom_robot_env_registers_pickles_and_vectorizes(tmp_path):
    cfg = tmp_path / "g1h.toml"
    cfg.write_text(
        textwrap.dedent("""\
        description = "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf"
        feet = { left_foot = "left_ankle_roll_link", right_foot = "right_ankle_roll_link" }
        lock = ["left_hand_thumb_0_joint", "right_hand_thumb_0_joint"]
    """)
    )
    env_id = wbsim.envs.register_robot_env("test/G1HandsLocked-v0", cfg, max_seconds=5.0)
    env = gym.make(env_id)
    robot = env.unwrapped.robot
    assert robot.n_joints == 41 and "left_hand_thumb_0_joint" not in robot.joint_names
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    for _ in range(5):
        env.step(action)
    copy = pickle.loads(pickle.dumps(env))
    for _ in range(5):
        o1, *_ = env.step(action)
        o2, *_ = copy.step(action)
    np.testing.assert_array_equal(o1, o2)
    # an env built around a loaded robot pickles through the robot's (completed) config
    from wbsim.envs.humanoid import HumanoidEnv

    direct = HumanoidEnv(robot=robot)
    direct.reset(seed=0)
    assert pickle.loads(pickle.dumps(direct)).robot.joint_names == robot.joint_names
    vec = gym.make_vec(env_id, 2, vectorization_mode="async", info_mode="lean")
    try:
        obs, _ = vec.reset(seed=0)
        obs, *_ = vec.step(np.zeros(vec.action_space.shape, dtype=np.float32))
        assert obs.shape == (2, env.observation_space.shape[0])
    finally:
        vec.close()
    with pytest.raises(WbsimError, match="no feet"):
        wbsim.envs.register_robot_env(
            "test/NoFeet-v0", str(ERD / "romeo_description/urdf/romeo_small.urdf")
        )


def test_projected_id_lifts_a_foot_on_icub():
    """iCub's feet allow a lift: the one-leg plan on projected_id (qp)."""
    from wbsim.envs.schedules import one_leg_plan
    from wbsim.rollout import EpisodeConfig, run_episode

    s = run_episode(
        EpisodeConfig(
            env="wbsim/ICubStand-v0",
            controller="projected_id",
            seconds=6.0,
            progress=False,
            env_options={"plan": one_leg_plan},
        )
    )
    assert not s["fell"] and s["swing_clearance_min_hold_m"] > 0.04
    assert s["events"]["force_sign"] == 0


def test_robot_config_toml_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('description = "x.urdf"\nfete = 1\n')
    with pytest.raises(WbsimError, match="fete.*known.*feet"):
        RobotConfig.from_toml(bad)
    bad.write_text('feet = { left_foot = "a", right_foot = "b" }\n')
    with pytest.raises(WbsimError, match="no description"):
        RobotConfig.from_toml(bad)
    bad.write_text("description = [\n")
    with pytest.raises(WbsimError, match="not valid TOML"):
        RobotConfig.from_toml(bad)
    bad.write_text(
        'description = "romeo_description/urdf/romeo_small.urdf"\n'
        'feet = { left_foot = "l_sole", right_foot = "r_sole" }\nlock = ["LKnee"]\n'
    )
    with pytest.raises(RobotLoadError, match="cannot lock joint 'LKnee'.*LKneePitch"):
        wbsim.load_robot(bad)
    bad.write_text(
        'description = "romeo_description/urdf/romeo_small.urdf"\n'
        'feet = { left_foot = "l_sole", right_foot = "left_toe" }\n'
    )
    with pytest.raises(RobotLoadError, match="foot link 'left_toe'.*l_sole"):
        wbsim.load_robot(bad)
    bad.write_text(  # a misspelled torso: pushes would act on whatever body -1 indexes
        'description = "romeo_description/urdf/romeo_small.urdf"\n'
        'feet = { left_foot = "l_sole", right_foot = "r_sole" }\ntorso = "torsoo"\n'
    )
    with pytest.raises(
        RobotLoadError, match="torso link 'torsoo' is not in the description.*torso"
    ):
        wbsim.load_robot(bad)
    head = 'description = "romeo_description/urdf/romeo_small.urdf"\n'
    head += 'feet = { left_foot = "l_sole", right_foot = "r_sole" }\n'
    bad.write_text(head + "stand = { LKneePitch = 5.0 }\n")  # the knee folded through itself
    with pytest.raises(RobotLoadError, match=r"pose 'stand': LKneePitch = 5 rad is outside its"):
        wbsim.load_robot(bad)
    bad.write_text(head + "lock = { LWristYaw = 99.0 }\n")
    with pytest.raises(RobotLoadError, match=r"cannot lock joint 'LWristYaw' at 99: outside its"):
        wbsim.load_robot(bad)
    for key, value in (("armature", -1), ("damping", -5), ("frictionloss", "nan")):
        bad.write_text(head + f"[joint_dynamics]\n{key} = {value}\n")
        with pytest.raises(WbsimError, match=f"JointDynamics: {key} must be a finite number >= 0"):
            wbsim.load_robot(bad)


def test_the_readmes_robot_config_loads_as_written(tmp_path):
    """The README's TOML example, copied as it is, builds the robot it names (a user's first
    config starts from it): its locked joints gone, its posture joints known."""
    import re

    readme = Path(__file__).resolve().parents[1] / "README.md"
    if not readme.exists():
        pytest.skip("README.md is not beside tests/ (an installed copy of the tests)")
    blocks = re.findall(r"```toml\n(.*?)```", readme.read_text(), re.DOTALL)
    configs = [b for b in blocks if "description =" in b]
    assert configs, "the README has no robot-config TOML example"
    text = textwrap.dedent(configs[0])
    (tmp_path / "mine.toml").write_text(text)
    robot = wbsim.load_robot(tmp_path / "mine.toml")
    cfg = RobotConfig.from_toml(tmp_path / "mine.toml")
    assert robot.n_joints > 0 and not set(cfg.locked_joints) & set(robot.joint_names)
    assert set(cfg.stand_posture) <= set(robot.joint_names) and cfg.stand_posture


def test_robot_config_pickles_and_round_trips():
    cfg = wbsim.load_robot("romeo").config  # the completed config: corners, stand pose
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    back = RobotConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg
    assert all(f.corners is not None for f in cfg.feet.values()) and "stand" in cfg.poses
    assert [n for n in CORNER_NAMES] == ["front_left", "back_left", "back_right", "front_right"]


def test_icub_loads_from_the_cache_without_converting(tmp_path):
    """The first load converts iCub's 56 COLLADA meshes; the next (a new process) reads the
    cache and does not even import trimesh. Wall times are printed, not judged (shared CPUs)."""
    code = (
        "import sys, time, warnings; warnings.simplefilter('ignore'); import wbsim; "
        "t = time.perf_counter(); wbsim.load_robot('icub'); "
        "print(time.perf_counter() - t, 'trimesh' in sys.modules)"
    )
    env = {**os.environ, "WBSIM_CACHE": str(tmp_path / "cache")}
    times = []
    for converted in (True, False):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout.split()
        times.append(float(out[0]))
        assert out[1] == str(converted)
    assert len(list((tmp_path / "cache" / "meshes").glob("*.stl"))) == 56
    print(f"icub load: {times[0]:.2f} s converting, {times[1]:.2f} s from the cache")
    assert times[1] < times[0]


def test_robot_descriptions_not_cached_says_how_to_fill_it(tmp_path, monkeypatch):
    """Never a download: without the repository in robot_descriptions' cache the error names the
    folder, the repository and the command that fills it."""
    monkeypatch.setenv("ROBOT_DESCRIPTIONS_CACHE", str(tmp_path / "rd"))
    with pytest.raises(RobotLoadError) as exc:
        wbsim.load_robot("h1_mj_description")
    msg = str(exc.value)
    assert str(tmp_path / "rd" / "mujoco_menagerie") in msg and "git clone" in msg
    assert "import robot_descriptions.h1_mj_description" in msg
    assert not (tmp_path / "rd").exists()
    with pytest.raises(UnknownNameError, match="h1_mj_description"):
        wbsim.load_robot("no_such_description")


def test_a_partial_robot_descriptions_cache_is_refused_not_fetched(tmp_path, monkeypatch):
    """robot_descriptions re-clones a cached folder that is not a git repository and fetches a
    commit its repository lacks: wbsim refuses both before robot_descriptions runs, saying what
    is wrong, and leaves the folder as it was (git is allowed local files only, as a guard)."""
    import subprocess

    monkeypatch.setenv("ROBOT_DESCRIPTIONS_CACHE", str(tmp_path / "rd"))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")
    folder = tmp_path / "rd" / "mujoco_menagerie"
    folder.mkdir(parents=True)
    with pytest.raises(RobotLoadError, match="is not a git repository") as exc:
        wbsim.load_robot("h1_mj_description")
    assert "does not download" in str(exc.value)
    assert list(folder.iterdir()) == []
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    with pytest.raises(RobotLoadError, match="lacks commit") as exc:
        wbsim.load_robot("h1_mj_description")
    assert "does not download" in str(exc.value)
    assert sorted(p.name for p in folder.iterdir()) == [".git"]


MENAGERIE = {  # robot_descriptions module -> feet links
    "g1_mj_description": ("left_ankle_roll_link", "right_ankle_roll_link"),
    "h1_mj_description": ("left_ankle_link", "right_ankle_link"),
    "op3_mj_description": ("l_ank_roll_link", "r_ank_roll_link"),
}


@pytest.fixture
def menagerie_cache(tmp_path, monkeypatch):
    """robot_descriptions' cache with MuJoCo Menagerie, when the developer named one
    (ROBOT_DESCRIPTIONS_CACHE before the tests started): linked into a temporary cache, and git
    limited to local files (no network)."""
    source = os.environ.get("WBSIM_TEST_RD_SOURCE")
    if not source or not (Path(source) / "mujoco_menagerie").is_dir():
        pytest.skip(
            "no MuJoCo Menagerie in a robot_descriptions cache (set "
            "ROBOT_DESCRIPTIONS_CACHE to one to run this test)"
        )
    (tmp_path / "rd").mkdir()
    (tmp_path / "rd" / "mujoco_menagerie").symlink_to(Path(source) / "mujoco_menagerie")
    monkeypatch.setenv("ROBOT_DESCRIPTIONS_CACHE", str(tmp_path / "rd"))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")


@pytest.mark.parametrize("name", MENAGERIE)
def test_menagerie_humanoids_load_and_stand(name, menagerie_cache):
    from wbsim.envs.humanoid import HumanoidEnv
    from wbsim.rollout import EpisodeConfig, run_episode

    left, right = MENAGERIE[name]
    robot = wbsim.load_robot(
        name, config={"feet": {"left_foot": {"link": left}, "right_foot": {"link": right}}}
    )
    check_models(
        name, robot.mj_model, robot.pin_model, robot.converter, robot.joint_limits, n_states=20
    )
    env_id = wbsim.envs.register_robot_env(f"test/{name}-v0", robot.config)
    s = run_episode(EpisodeConfig(env=env_id, seconds=2.0, progress=False))
    assert not s["fell"] and s["base_drift_m"] < 2e-3
    assert isinstance(HumanoidEnv(robot=robot.config), HumanoidEnv)


@pytest.mark.parametrize("geom", ["box", "ellipsoid", "capsule", "cylinder", "sphere"])
def test_sole_corners_of_primitive_foot_geoms(geom):
    """A foot whose collision geom is a MuJoCo primitive: the corners are the bottom face of the
    geom's box (``size`` half-extents; a capsule's caps and a sphere's radius included), in the
    foot body's frame, front-left first (independent: the sizes by hand)."""
    import mujoco

    from wbsim.description import sole_corners

    size = {
        "box": "0.1 0.04 0.02",
        "ellipsoid": "0.1 0.04 0.02",
        "capsule": "0.02 0.05",  # radius, half-length along z
        "cylinder": "0.03 0.02",
        "sphere": "0.03",
    }[geom]
    xml = f"""<mujoco><worldbody><body name="foot" pos="0 0 0.5">
      <geom type="{geom}" size="{size}" pos="0.01 0 -0.03"/></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    corners = sole_corners(model, ["foot"], "foot", np.array([1.0, 0.0, 0.0]), "test")
    half = {
        "box": (0.1, 0.04, 0.02),
        "ellipsoid": (0.1, 0.04, 0.02),
        "capsule": (0.02, 0.02, 0.07),
        "cylinder": (0.03, 0.03, 0.02),
        "sphere": (0.03, 0.03, 0.03),
    }[geom]
    hx, hy, hz = half
    expected = np.array(
        [[0.01 + hx, hy, 0.0], [0.01 - hx, hy, 0.0], [0.01 - hx, -hy, 0.0], [0.01 + hx, -hy, 0.0]]
    )
    expected[:, 2] = -0.03 - hz
    np.testing.assert_allclose(corners, expected, atol=1e-9)
