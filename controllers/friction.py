"""The friction cone a controller may assume, written once for every controller: the simulator's
``mu`` and cone, and their linear rows.

A contact force ``f`` (N, on the robot) is split in the contact frame (rotation ``R``, contact frame
to world; its z axis is the contact normal) into a normal ``f_n`` and a tangential part
``(f_1, f_2)``. Each contact gets 5 rows ``C f <= d``, in the order of :data:`CONE_ROWS`:
unilaterality ``f_n >= f_min`` and the four faces of a pyramid. ``f`` is given in the world frame
(``C = C_local R^T``) or, with ``rotation=None``, in the contact frame itself (the floor's: MuJoCo's
contact frame on a z-up plane has the world's x and y as tangents, so for the testbed's floor the
contact frame is the world's).

Cone types (:data:`CONE_TYPES`):

* ``"pyramidal"``: ``|f_1| + |f_2| <= mu f_n``, MuJoCo's pyramidal cone (its default) exactly: the
  forces ``f_n (n +- mu t_i)`` span it.
* ``"inscribed_pyramid"``: ``|f_1|, |f_2| <= (mu / sqrt(2)) f_n``, the square inscribed in
  Coulomb's circle ``|f_t| <= mu f_n``: inside MuJoCo's elliptic cone for any tangent axes.

:func:`simulator_friction` gives what a controller may assume: the ``mu`` MuJoCo gives each foot now
(``RobotState.friction``) times a margin (:data:`FRICTION_MARGIN`), and the linearisation of
MuJoCo's cone (:data:`SIMULATOR_CONES`). docs/controllers.md, "Friction".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from wbsim.contacts import CONE_NAMES, pair_friction
from wbsim.errors import UnknownNameError, WbsimError

__all__ = [
    "CONE_ROWS",
    "CONE_TYPES",
    "FRICTION_MARGIN",
    "SIMULATOR_CONES",
    "ContactFriction",
    "StepFriction",
    "check_friction_option",
    "cone_rows",
    "model_friction",
    "simulator_friction",
    "stacked_cone_rows",
]

#: The linearisations of a friction cone that :func:`cone_rows` writes.
CONE_TYPES = ("pyramidal", "inscribed_pyramid")
#: The linearisation a controller uses for each of MuJoCo's cones (``mjtCone`` names): the
#: pyramidal cone as it is, the elliptic cone by the pyramid inscribed in it.
SIMULATOR_CONES: Mapping[str, str] = {"pyramidal": "pyramidal", "elliptic": "inscribed_pyramid"}
#: The fraction of the simulator's ``mu`` a controller uses by default. MuJoCo's friction is soft:
#: a sticking contact creeps in proportion to its tangential force (a 10 kg box on mu 1 pushed along
#: x: 8 mm/s at 0.7 mu m g, 19 mm/s at 0.95) and slides at 1.0; a foot landing with little normal
#: force slips for a few steps at 0.9 (G1OneLeg's touch-down: 4 planar_complementarity events),
#: not at 0.7 (docs/controllers.md, "Friction").
FRICTION_MARGIN = 0.7
#: Names of the 5 rows of one contact, in order: unilaterality, then the pyramid's faces
#: ``(+f_1, +f_2)``, ``(+f_1, -f_2)``, ``(-f_1, +f_2)``, ``(-f_1, -f_2)`` for ``"pyramidal"`` and
#: ``+f_1``, ``-f_1``, ``+f_2``, ``-f_2`` for ``"inscribed_pyramid"``.
CONE_ROWS = ("normal", "friction_1", "friction_2", "friction_3", "friction_4")

_FACES = {
    "pyramidal": ([1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]),
    "inscribed_pyramid": ([1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]),
}


def cone_rows(
    mu: float,
    rotation: np.ndarray | None = None,
    min_normal_force: float = 0.0,
    cone: str = "pyramidal",
    dim: int = 3,
) -> tuple[np.ndarray, np.ndarray]:
    """The cone rows ``C f <= d`` of one contact.

    Args:
        mu: Coulomb friction coefficient (> 0).
        rotation: ``(3, 3)`` contact frame orientation (contact frame to the frame ``f`` is given
            in; z = normal). ``None``: ``f`` is in the contact frame.
        min_normal_force: ``f_min``, N (>= 0).
        cone: one of :data:`CONE_TYPES`.
        dim: 3 (a force) or 6 (a wrench ``[force; moment]``: zero columns on the moment).

    Returns:
        ``C (5, dim)``, ``d (5,)`` (rows :data:`CONE_ROWS`): ``-f_n <= -f_min``, then
        ``a f_1 + b f_2 - mu' f_n <= 0`` for each face ``(a, b)``: ``mu' = mu`` for
        ``"pyramidal"``, ``mu / sqrt(2)`` for ``"inscribed_pyramid"``.

    Raises:
        UnknownNameError: unknown ``cone``. WbsimError: ``mu <= 0``, ``min_normal_force < 0`` or
            ``dim`` not 3 or 6.
    """
    if cone not in CONE_TYPES:
        raise UnknownNameError("friction cone", cone, CONE_TYPES)
    if not (mu > 0 and min_normal_force >= 0 and dim in (3, 6)):
        raise WbsimError(
            f"cone_rows: need mu > 0, min_normal_force >= 0, dim 3 or 6; got {mu!r}, "
            f"{min_normal_force!r}, {dim!r}"
        )
    m = mu if cone == "pyramidal" else mu / math.sqrt(2.0)
    local = np.array([[0.0, 0.0, -1.0]] + [[a, b, -m] for a, b in _FACES[cone]])
    C = np.zeros((5, dim))
    C[:, :3] = local if rotation is None else local @ np.asarray(rotation, dtype=float).T
    d = np.array([0.0 - float(min_normal_force), 0.0, 0.0, 0.0, 0.0])  # +0.0 for f_min = 0
    return C, d


def stacked_cone_rows(
    n_contacts: int,
    mu: float | np.ndarray,
    rotations: np.ndarray | None = None,
    min_normal_force: float = 0.0,
    cone: str = "pyramidal",
    dim: int = 3,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cone_rows` of ``n_contacts`` contacts whose forces are stacked in one vector
    ``f (dim n_contacts,)``: block-diagonal ``C (5 n, dim n)`` and ``d (5 n,)``.

    ``mu``: one coefficient, or ``(n_contacts,)`` one per contact. ``rotations``:
    ``(n_contacts, 3, 3)`` contact frame orientations, or ``None`` (contact-frame forces, see
    :func:`cone_rows`).
    """
    mus = np.broadcast_to(np.asarray(mu, dtype=float), (n_contacts,))
    C = np.zeros((5 * n_contacts, dim * n_contacts))
    d = np.zeros(5 * n_contacts)
    for i in range(n_contacts):
        R = None if rotations is None else rotations[i]
        C[5 * i : 5 * i + 5, dim * i : dim * i + dim], d[5 * i : 5 * i + 5] = cone_rows(
            float(mus[i]), R, min_normal_force, cone, dim
        )
    return C, d


class ContactFriction(NamedTuple):
    """What a controller assumes of friction at one step: ``mu`` per foot and the cone type."""

    mu: dict[str, float]
    cone: str


def simulator_friction(
    state_friction: Mapping[str, float] | None,
    state_cone: str | None,
    feet: tuple[str, ...],
    fallback: ContactFriction,
    mu: float | None = None,
    margin: float = FRICTION_MARGIN,
) -> ContactFriction:
    """The friction a controller uses for ``feet`` at a step.

    Args:
        state_friction: ``RobotState.friction`` (foot -> the simulator's ``mu`` now) or ``None``.
        state_cone: ``RobotState.cone`` (``"pyramidal"`` or ``"elliptic"``) or ``None``.
        feet: the feet the controller needs.
        fallback: the simulator's friction and cone (by MuJoCo's name) where the state gives none
            (e.g. the robot's model read at the controller's construction).
        mu: a coefficient the user chose for every foot, or ``None``. It is a cap: a foot gets
            ``min(mu, margin * simulator's mu)``, never more than the simulator gives.
        margin: the fraction of the simulator's ``mu`` used (0 < margin <= 1).

    Returns:
        :class:`ContactFriction` with ``mu`` for each of ``feet`` and the linearisation
        (:data:`SIMULATOR_CONES`) of the simulator's cone.

    Raises:
        UnknownNameError: a cone MuJoCo does not have.
    """
    cone_name = state_cone if state_cone is not None else fallback.cone
    if cone_name not in SIMULATOR_CONES:
        raise UnknownNameError("simulator friction cone", cone_name, SIMULATOR_CONES)
    source = state_friction if state_friction is not None else fallback.mu
    cap = math.inf if mu is None else float(mu)
    return ContactFriction(
        {foot: min(cap, margin * float(source[foot])) for foot in feet}, SIMULATOR_CONES[cone_name]
    )


class StepFriction:
    """The friction a controller uses at a state, derived again only when the state's friction
    or cone changed (an env hands a new, equal dict each step).

    Args:
        derive: ``RobotState -> ContactFriction`` (a controller's ``friction`` method,
            :func:`simulator_friction` with its options); called with the first state and with
            each state whose ``friction`` or ``cone`` differs from the last derived one's.
    """

    def __init__(self, derive: Callable[[Any], ContactFriction]):
        self._derive = derive
        self._of: tuple[Any, Any] | None = None
        self._value: ContactFriction | None = None

    def __call__(self, state) -> ContactFriction:
        """``derive(state)``, or the last value when ``(state.friction, state.cone)`` equals the
        last derived state's."""
        if self._value is None or (state.friction, state.cone) != self._of:
            self._value = self._derive(state)
            friction = None if state.friction is None else dict(state.friction)
            self._of = (friction, state.cone)
        return self._value


def check_friction_option(mu: float | None, margin: float, model: ContactFriction) -> None:
    """Refuse a controller's ``mu`` the simulator cannot realise: above ``margin`` times the
    least ``mu`` of the robot's model (``model``), or a ``margin`` outside ``(0, 1]``.

    Raises:
        WbsimError: naming the option, the foot and the largest valid value.
    """
    if not (isinstance(margin, (int, float)) and 0 < margin <= 1):
        raise WbsimError(f"friction_margin = {margin!r}: expected a number in (0, 1]")
    if mu is None or not model.mu:
        return
    foot = min(model.mu, key=model.mu.__getitem__)
    limit = margin * model.mu[foot]
    if not (isinstance(mu, (int, float)) and 0 < mu <= limit):
        raise WbsimError(
            f"mu = {mu!r}: expected a number in (0, {limit:g}]: MuJoCo gives {foot} mu "
            f"{model.mu[foot]:g} and a command needs friction_margin ({margin:g}) of it to stick "
            "(docs/controllers.md, 'Friction'); leave mu unset to use the simulator's"
        )


def model_friction(robot) -> ContactFriction:
    """The simulator's ``mu`` per contact (a foot or a hand: the least over its points, with its
    surface) and cone, by MuJoCo's name, read from the robot's MuJoCo model now
    (:func:`wbsim.contacts.pair_friction`): what a controller assumes for a state that carries
    none."""
    m = robot.mj_model
    mu = {
        name: float(pair_friction(m, foot.mj_geom_ids, foot.mj_surface_geom_id).min())
        for name, foot in robot.contacts.items()
    }
    return ContactFriction(mu, CONE_NAMES[int(m.opt.cone)])
