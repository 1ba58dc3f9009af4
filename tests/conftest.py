"""Shared fixtures: robots are built once per test session (wbsim caches the compiled models)."""

import atexit
import os
import shutil
import signal
import tempfile

os.environ.setdefault("MUJOCO_GL", "egl")
# Converted meshes and robot_descriptions' clones go to a temporary folder, never the user's home
# (set before wbsim is imported; subprocesses inherit them). A robot_descriptions cache the
# developer named stays readable as WBSIM_TEST_RD_SOURCE (tests/test_new_robots.py).
_TMP = tempfile.mkdtemp(prefix="wbsim-tests-")
atexit.register(shutil.rmtree, _TMP, True)
os.environ["WBSIM_CACHE"] = os.path.join(_TMP, "wbsim-cache")
if os.environ.get("ROBOT_DESCRIPTIONS_CACHE"):
    os.environ.setdefault("WBSIM_TEST_RD_SOURCE", os.environ["ROBOT_DESCRIPTIONS_CACHE"])
os.environ["ROBOT_DESCRIPTIONS_CACHE"] = os.path.join(_TMP, "robot_descriptions")

import mujoco
import numpy as np
import pytest

import wbsim

# MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working folder (the clone's root): the
# tests that provoke an unstable simulation write theirs into the temporary folder instead.
_log_config = mujoco.MjLogConfig.get()
_log_config.logfile = os.path.join(_TMP, "MUJOCO_LOG.TXT")
_log_config.set()


@pytest.fixture(scope="session")
def g1():
    return wbsim.load_robot("g1")


@pytest.fixture(scope="session")
def talos():
    return wbsim.load_robot("talos")


@pytest.fixture(scope="session", params=["g1", "talos"])
def robot(request):
    return wbsim.load_robot(request.param)


def random_state(robot, rng):
    """A random Pinocchio state: base anywhere with non-zero roll, pitch and yaw, a random twist,
    joints inside their limits, random joint velocities. Returns ``(q, v)``."""
    import pinocchio as pin

    lo, hi = robot.joint_limits[:, 0].copy(), robot.joint_limits[:, 1].copy()
    lo[~np.isfinite(lo)], hi[~np.isfinite(hi)] = -np.pi, np.pi
    joints = dict(zip(robot.joint_names, rng.uniform(lo, hi)))
    rpy = rng.uniform(0.2, 1.0, size=3) * rng.choice([-1, 1], size=3)
    quat = pin.Quaternion(pin.rpy.rpyToMatrix(*rpy))
    q = robot.configuration(rng.normal(size=3), [quat.w, quat.x, quat.y, quat.z], joints)
    v = rng.normal(size=robot.pin_model.nv)
    return q, v


def forces_by_name(robot, cmd):
    """The commanded forces of ``cmd`` at the points of the feet it assumed in contact (or the
    wrenches of those feet), by name, in the robot's order: what a controller loads."""
    if cmd.point_forces is not None:
        return {
            n: f
            for n, f, foot in zip(
                robot.contact_point_names,
                cmd.point_forces,
                (f for ft in robot.feet.values() for f in [ft.name] * 4),
            )
            if foot in cmd.contact_set
        }
    if cmd.foot_wrenches is not None:
        return {n: w for n, w in zip(robot.foot_names, cmd.foot_wrenches) if n in cmd.contact_set}
    return {}


# What libraries cache under the user's home while the tests run (matplotlib's font list, Mesa's
# shader cache under XDG_CACHE_HOME) goes to a folder of the session, removed at its end; the
# subprocesses of the tests inherit it. (Set here, before any test imports matplotlib or renders.)
_CACHE = tempfile.mkdtemp(prefix="wbsim-tests-cache-")
atexit.register(shutil.rmtree, _CACHE, True)
os.environ["XDG_CACHE_HOME"] = _CACHE
os.environ["MPLCONFIGDIR"] = os.path.join(_CACHE, "matplotlib")


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt in this process, as ``wbsim run`` makes it
    (``_install_sigint_as_keyboard_interrupt``): a test process started as a background job of a
    shell inherits SIGINT ignored, and the signals these tests send would vanish."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
