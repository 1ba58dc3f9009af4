"""PhasePlan.at: the phase at each time, fresh targets every call, schedules that pickle and compare."""

import copy
import pickle

import numpy as np
import pytest

from wbsim.envs import schedules


@pytest.mark.parametrize("plan_name", ["standing_plan", "one_leg_plan", "step_in_place_plan"])
def test_schedule_phases_and_copies(plan_name):
    plan = getattr(schedules, plan_name)()
    plan.set_context(
        com=[0.01, 0.02, 0.7],
        left_foot=[0.0, 0.1, 0.05],
        right_foot=[0.0, -0.1, 0.05],
        left_sole_centre=[0.02, 0.1, 0.0],
        right_sole_centre=[0.02, -0.1, 0.0],
    )
    for t in np.linspace(0.0, 12.0, 61):
        sched = plan.at(float(t))
        i = plan.index_at(float(t))
        assert sched.phase_index == i and sched.phase == plan.phases[i].name
        assert sched.contact_set == plan.phases[i].contact_set
        assert sched.targets is not plan.at(float(t)).targets  # a fresh dict every call
        clone = pickle.loads(pickle.dumps(sched))
        assert clone == sched and copy.deepcopy(sched) == sched
        with pytest.raises(TypeError):
            hash(sched)
