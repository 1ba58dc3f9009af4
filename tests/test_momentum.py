"""The centroidal momentum balance (wbsim.momentum): it closes to round-off on MuJoCo's own motion
through an impact and a push, it does not close when a force is left out, and it equals the balance
written out directly."""

import mujoco
import numpy as np
import pinocchio as pin

from wbsim.contacts import ContactSensor
from wbsim.momentum import MomentumBalance


def _simulate(robot, data, steps, push_body=None, push=None):
    """Zero-torque steps; per step the state it started from, qacc, the sensor values and the
    pushed body's CoM."""
    m = robot.mj_model
    rows = {"qpos": [], "qvel": [], "qacc": [], "sd": [], "xipos": []}
    for _ in range(steps):
        if push is not None:
            data.xfrc_applied[push_body, 0:3] = push
        rows["qpos"].append(data.qpos.copy())
        rows["qvel"].append(data.qvel.copy())
        mujoco.mj_step(m, data)
        rows["qacc"].append(data.qacc.copy())
        rows["sd"].append(data.sensordata.copy())
        rows["xipos"].append(data.xipos[push_body].copy() if push_body is not None else np.zeros(3))
    return {k: np.array(v) for k, v in rows.items()}


def test_balance_closes_through_an_impact_and_a_push(g1):
    """Dropped 3 cm (impact forces up to several m g), then pushed at the pelvis: the residual stays
    below 1e-6 m g; leaving out the push (or the contacts) breaks it, so the balance is not
    trivially zero."""
    mb = MomentumBalance(g1)
    sensor = ContactSensor.for_robot(g1)
    d = g1.make_data("stand")
    d.qpos[2] += 0.03
    mujoco.mj_forward(g1.mj_model, d)
    drop = _simulate(g1, d, 150)
    s = sensor.decode(drop["sd"])
    assert s.external_force_world[:, 2].max() > 2 * mb.weight  # the impact
    res = mb.residuals(drop["qpos"], drop["qvel"], drop["qacc"], s)
    assert mb.relative(res).max() < 1e-6
    pelvis = g1.mj_model.body("pelvis").id
    push = np.array([40.0, -20.0, 0.0])
    pushed = _simulate(g1, d, 50, pelvis, push)
    s = sensor.decode(pushed["sd"])
    pushes = np.tile(push, (50, 1))
    res = mb.residuals(pushed["qpos"], pushed["qvel"], pushed["qacc"], s, pushes, pushed["xipos"])
    assert mb.relative(res).max() < 1e-6
    no_push = mb.residuals(pushed["qpos"], pushed["qvel"], pushed["qacc"], s)
    np.testing.assert_allclose(no_push[:, :3], pushes, atol=1e-6 * mb.weight)
    # without the contacts: a sensing whose contact sensor read nothing
    empty = sensor.decode(
        np.where(
            np.isin(np.arange(pushed["sd"].shape[1]), sensor.layout.external), 0.0, pushed["sd"]
        )
    )
    no_contacts = mb.residuals(
        pushed["qpos"], pushed["qvel"], pushed["qacc"], empty, pushes, pushed["xipos"]
    )
    # what was left out shows up as the residual: the contact force, exactly
    np.testing.assert_allclose(no_contacts[:, :3], s.external_force_world, atol=1e-6 * mb.weight)
    assert np.abs(s.external_force_world).max() > mb.weight


def test_residual_equals_the_balance_written_out(g1):
    """At random states, accelerations, contact wrenches and pushes, the residual equals the
    balance written directly: ``dh_G/dt`` with ``vdot = solve(velocity_map, qacc - Tdot v)``, the
    CoM from ``pinocchio.centerOfMass``, moments with ``np.cross`` about it."""
    from conftest import random_state

    mb = MomentumBalance(g1)
    sensor = ContactSensor.for_robot(g1)
    model, data = g1.pin_model, g1.pin_model.createData()
    conv, m = g1.converter, g1.mj_model
    rng = np.random.default_rng(11)
    k = 6
    qpos, qvel = np.empty((k, m.nq)), np.empty((k, m.nv))
    for i in range(k):
        qpos[i], qvel[i] = g1.pin_to_mj(*random_state(g1, rng))
    qacc = rng.normal(size=(k, m.nv)) * 5
    sd = rng.normal(size=(k, m.nsensordata)) * 100  # the net contact wrench sensor's values
    push, point = rng.normal(size=(k, 3)) * 20, rng.normal(size=(k, 3))
    got = mb.residuals(qpos, qvel, qacc, sensor.decode(sd), push, point)
    ext = sensor.layout.external
    for i in range(k):
        q, v = g1.mj_to_pin(qpos[i], qvel[i])
        a = np.linalg.solve(conv.velocity_map(q), qacc[i] - conv.velocity_map_dot_times_v(q, v))
        dh = pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
        c = pin.centerOfMass(model, data, q)
        # the sensor gives the net force f and torque t on the environment at p
        f_env, t_env, p = sd[i, ext[1:4]], sd[i, ext[4:7]], sd[i, ext[7:10]]
        force = -f_env + g1.total_mass * m.opt.gravity + push[i]
        moment = -t_env + np.cross(p - c, -f_env) + np.cross(point[i] - c, push[i])
        expect = np.concatenate([dh.linear - force, dh.angular - moment])
        np.testing.assert_allclose(got[i], expect, atol=1e-9 * (1 + np.abs(expect).max()))
    np.testing.assert_allclose(mb.relative(got), np.linalg.norm(got, axis=1) / mb.weight)
