"""The public API: every name a module lists in ``__all__`` exists, and ``import wbsim`` gives the
documented entry points."""

import importlib
import pkgutil

import pytest

import wbsim
import wbsim.controllers
import wbsim.envs

MODULES = sorted(
    {
        m.name
        for pkg in (wbsim, wbsim.envs, wbsim.controllers)
        for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
        if not m.name.rsplit(".", 1)[-1].startswith("_") and not m.name.startswith("wbsim.examples")
    }
    | {"wbsim.envs", "wbsim.controllers"}
)


def test_the_top_level_api():
    for name in wbsim.__all__:
        assert getattr(wbsim, name) is not None, name
    robot = wbsim.load_robot("g1")
    assert isinstance(robot, wbsim.Robot) and isinstance(wbsim.Simulation(robot), wbsim.Simulation)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_s_all_exists(module):
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    assert names is not None, f"{module} has no __all__"
    assert len(set(names)) == len(names), f"{module}.__all__ has duplicates"
    for name in names:
        assert hasattr(mod, name), f"{module}.__all__ names {name!r}, which it does not define"
