"""The linearised friction cone of a contact, written once for every controller.

A contact force ``f`` (N, on the robot) is split in the contact frame (rotation ``R``, contact frame
to world; its z axis is the contact normal) into a normal ``f_n`` and a tangential part
``(f_x, f_y)``. Each contact gets 5 rows ``C f <= d``, in the order of :data:`CONE_ROWS`:
unilaterality ``f_n >= f_min`` and the four faces of the cone's pyramid. ``f`` is given in the world
frame (``C = C_local R^T``) or, with ``rotation=None``, in the contact frame itself. For a foot
wrench ``[force; moment]`` the rows act on the force and ignore the moment.

Cone types (:data:`CONE_TYPES`): ``"inscribed_pyramid"``, ``|f_x|, |f_y| <= (mu / sqrt(2)) f_n``,
the pyramid inscribed in Coulomb's cone ``|f_t| <= mu f_n`` (any force it allows is inside the
cone; docs/controllers.md, "Friction").
"""

from __future__ import annotations

import math

import numpy as np

from wbsim.errors import UnknownNameError, WbsimError

__all__ = ["CONE_ROWS", "CONE_TYPES", "cone_rows", "stacked_cone_rows"]

#: The linearisations of Coulomb's cone that :func:`cone_rows` writes.
CONE_TYPES = ("inscribed_pyramid",)
#: Names of the 5 rows of one contact, in order.
CONE_ROWS = ("normal", "friction_x+", "friction_x-", "friction_y+", "friction_y-")


def cone_rows(mu: float, rotation: np.ndarray | None = None, min_normal_force: float = 0.0,
              cone: str = "inscribed_pyramid", dim: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The cone rows ``C f <= d`` of one contact.

    Args:
        mu: Coulomb friction coefficient (> 0).
        rotation: ``(3, 3)`` contact frame orientation (contact frame to world; z = normal): ``f``
            is a world-frame force. ``None``: ``f`` is in the contact frame (for a floor of normal
            world z and world-aligned axes, the contact frame is the world's).
        min_normal_force: ``f_min``, N (>= 0).
        cone: one of :data:`CONE_TYPES`.
        dim: 3 (a force) or 6 (a wrench ``[force; moment]``: zero columns on the moment).

    Returns:
        ``C (5, dim)``, ``d (5,)`` (rows :data:`CONE_ROWS`): ``-f_n <= -f_min`` and
        ``+-f_x - mu' f_n <= 0``, ``+-f_y - mu' f_n <= 0`` with ``mu' = mu / sqrt(2)``.

    Raises:
        UnknownNameError: unknown ``cone``. WbsimError: ``mu <= 0``, ``min_normal_force < 0`` or
            ``dim`` not 3 or 6.
    """
    if cone not in CONE_TYPES:
        raise UnknownNameError("friction cone", cone, CONE_TYPES)
    if not (mu > 0 and min_normal_force >= 0 and dim in (3, 6)):
        raise WbsimError(f"cone_rows: need mu > 0, min_normal_force >= 0, dim 3 or 6; got {mu!r}, "
                         f"{min_normal_force!r}, {dim!r}")
    m = mu / math.sqrt(2.0)
    local = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, -m], [-1.0, 0.0, -m], [0.0, 1.0, -m],
                      [0.0, -1.0, -m]])
    C = np.zeros((5, dim))
    C[:, :3] = local if rotation is None else local @ np.asarray(rotation, dtype=float).T
    d = np.array([0.0 - float(min_normal_force), 0.0, 0.0, 0.0, 0.0])  # +0.0 for f_min = 0
    return C, d


def stacked_cone_rows(n_contacts: int, mu: float, rotations: np.ndarray | None = None,
                      min_normal_force: float = 0.0, cone: str = "inscribed_pyramid",
                      dim: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cone_rows` of ``n_contacts`` contacts whose forces are stacked in one vector
    ``f (dim n_contacts,)``: block-diagonal ``C (5 n, dim n)`` and ``d (5 n,)``.

    ``rotations``: ``(n_contacts, 3, 3)`` contact frame orientations, or ``None`` (contact-frame
    forces, see :func:`cone_rows`).
    """
    C = np.zeros((5 * n_contacts, dim * n_contacts))
    d = np.zeros(5 * n_contacts)
    for i in range(n_contacts):
        R = None if rotations is None else rotations[i]
        C[5 * i:5 * i + 5, dim * i:dim * i + dim], d[5 * i:5 * i + 5] = cone_rows(
            mu, R, min_normal_force, cone, dim)
    return C, d
