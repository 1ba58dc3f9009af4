"""The per-step objects of the env (ContactSchedule from PhasePlan.at, RobotState in info) are built
without their frozen ``__init__``: they must be the same objects as the constructor's."""

import copy
import dataclasses
import pickle

import gymnasium as gym
import numpy as np
import pytest

import wbsim  # noqa: F401  (registers the envs)
from wbsim.controllers.base import ContactSchedule, RobotState
from wbsim.envs import schedules


def _assert_same_object(fast, slow):
    assert type(fast) is type(slow)
    assert fast == slow and slow == fast
    assert repr(fast) == repr(slow)
    assert list(vars(fast)) == list(vars(slow))  # field order, as __init__ stores them
    assert pickle.dumps(fast) == pickle.dumps(slow)
    clone = pickle.loads(pickle.dumps(fast))
    assert clone == slow and type(clone) is type(slow)
    assert copy.deepcopy(fast) == slow
    assert dataclasses.asdict(fast).keys() == dataclasses.asdict(slow).keys()
    name = next(iter(vars(fast)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(fast, name, None)
    with pytest.raises(TypeError):
        hash(fast)


@pytest.mark.parametrize("plan_name", ["standing_plan", "one_leg_plan", "step_in_place_plan"])
def test_schedule_is_the_constructors(plan_name):
    plan = getattr(schedules, plan_name)()
    plan.set_context(com=[0.01, 0.02, 0.7], left_foot=[0.0, 0.1, 0.05], right_foot=[0.0, -0.1, 0.05],
                     left_sole_centre=[0.02, 0.1, 0.0], right_sole_centre=[0.02, -0.1, 0.0])
    for t in np.linspace(0.0, 12.0, 61):
        fast = plan.at(float(t))
        slow = ContactSchedule(**{f.name: getattr(fast, f.name)
                                  for f in dataclasses.fields(ContactSchedule)})
        _assert_same_object(fast, slow)
        i = plan.index_at(float(t))
        assert fast.phase_index == i and fast.phase == plan.phases[i].name
        assert fast.targets is not plan.at(float(t)).targets  # a fresh dict every call


def test_info_state_is_the_constructors():
    env = gym.make("wbsim/G1Stand-v0")
    env.reset(seed=0)
    for _ in range(3):
        info = env.step(np.zeros(29, np.float32))[4]
    fast = info["state"]
    slow = RobotState(t=fast.t, q=fast.q, v=fast.v, sensed_contacts=fast.sensed_contacts)
    _assert_same_object(fast, slow)
    env.close()
