"""Scene files shared by every robot, and two DCC plan files of the G1 (installed as
``wbsim.assets``).

``plans/g1_dcc_step.npz``, ``plans/g1_dcc_walk.npz``: the plans of the README's planning section
(``wbsim dcc plan --task step --seconds 4.5`` and ``--task walk --seconds 4.5``, Baumgarte 0.05 /
20, ending at rest, 2026-12-02), replayed by ``wbsim/G1PlanReplay-v0``
(:func:`wbsim.envs.schedules.dcc_plan`).
"""

from pathlib import Path

__all__ = ["ASSETS_DIR", "SCENE_XML"]

ASSETS_DIR = Path(__file__).resolve().parent
SCENE_XML = ASSETS_DIR / "scene.xml"
PLANS_DIR = ASSETS_DIR / "plans"
