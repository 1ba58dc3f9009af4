"""``wbsim.envs``, ``wbsim.controllers`` and ``wbsim.assets`` when ``wbsim`` is imported from a clone.

pyproject.toml installs the folders ``envs/``, ``controllers/`` and ``assets/`` of the repository as
those subpackages. Python started in a clone's root (``python -m wbsim.cli``, ``python -m pytest``)
imports the clone's ``wbsim/`` folder before an installed, non-editable wbsim, and that folder holds
none of the three: :func:`install` maps them to the folders beside it, as pyproject does.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

#: subpackage -> folder of the repository (pyproject.toml's ``package-dir``)
SUBPACKAGES = {"wbsim.envs": "envs", "wbsim.controllers": "controllers", "wbsim.assets": "assets"}


class _CloneFinder:
    """A meta path finder for the :data:`SUBPACKAGES` in the clone ``root`` (their own modules are
    then found through their ``__path__`` as usual)."""

    def __init__(self, root: str):
        self.root = root

    def find_spec(self, name: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        folder = SUBPACKAGES.get(name)
        if folder is None:
            return None
        where = os.path.join(self.root, folder)
        return importlib.util.spec_from_file_location(
            name, os.path.join(where, "__init__.py"), submodule_search_locations=[where]
        )


def install(package_dir: str) -> None:
    """Map the subpackages to the clone's folders if ``package_dir`` (``wbsim.__path__[0]``) is a
    clone's ``wbsim/`` folder (its repository has ``envs/__init__.py``; an installed wbsim has its
    own ``wbsim/envs``); otherwise do nothing."""
    if os.path.isdir(os.path.join(package_dir, "envs")):
        return
    root = os.path.dirname(os.path.abspath(package_dir))
    if os.path.isfile(os.path.join(root, "envs", "__init__.py")) and not any(
        isinstance(f, _CloneFinder) for f in sys.meta_path
    ):
        sys.meta_path.append(_CloneFinder(root))
