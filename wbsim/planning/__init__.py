"""Trajectory optimisation with dynamic complementarity conditions (DCC): the contact
formulations (:mod:`~wbsim.planning.complementarity`), the point-mass comparison
(:mod:`~wbsim.planning.toy`), the whole-body G1 planner (:mod:`~wbsim.planning.whole_body`,
:mod:`~wbsim.planning.kinematics`, :mod:`~wbsim.planning.receding`), its plan file
(:mod:`~wbsim.planning.plan_file`) and its replay video (:mod:`~wbsim.planning.video`).

Needs the ``plan`` extra (``casadi``, ``adam-robotics[casadi]``); nothing here imports MuJoCo except
:mod:`~wbsim.planning.video`.
"""

__all__: list[str] = []  # the modules are the API: import them by name
