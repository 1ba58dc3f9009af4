"""Mesh files that MuJoCo cannot read, converted once and cached; ``package://`` URIs resolved.

MuJoCo reads binary STL, OBJ and MSH meshes. Robot descriptions also use COLLADA (``.dae``: iCub,
Romeo, Talos's full model), ASCII STL (simple_humanoid) and other formats: :func:`mujoco_mesh`
converts such a file with ``trimesh`` to a binary STL in the cache (:func:`cache_dir`), keyed by
the file's content, so a second load reads the converted file. COLLADA's ``<unit meter>`` scale and
``<up_axis>`` are applied (trimesh reads neither; ROS tools, through assimp, do): a ``Y_UP`` mesh is
turned so that its y axis becomes z.

:func:`resolve_package_uris` turns ``package://PKG/path`` into a file path (example-robot-data's
``share`` folder, ``ROS_PACKAGE_PATH``, the description's ancestors); :func:`convert_urdf_meshes`
rewrites a URDF's mesh file names to files MuJoCo reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from wbsim.errors import RobotLoadError

__all__ = [
    "CACHE_ENV",
    "cache_dir",
    "convert_urdf_meshes",
    "mujoco_mesh",
    "needs_conversion",
    "resolve_package_uris",
]

#: Environment variable naming the cache folder (default: ``$XDG_CACHE_HOME/wbsim`` or
#: ``~/.cache/wbsim``).
CACHE_ENV = "WBSIM_CACHE"
#: Bumped when the conversion changes: converted files of another version are not reused.
_CONVERTER_VERSION = "1"
#: Mesh formats MuJoCo decodes itself (STL only when binary).
_MUJOCO_FORMATS = (".stl", ".obj", ".msh")
#: COLLADA up axis -> rotation that turns it into z up (``v_new = R @ v``).
_UP_AXIS = {
    "Z_UP": np.eye(3),
    "Y_UP": np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]),  # y -> z
    "X_UP": np.array([[0.0, 0, -1], [0, 1, 0], [1, 0, 0]]),  # x -> z
}


def cache_dir() -> Path:
    """The folder of converted meshes: ``$WBSIM_CACHE/meshes``, else
    ``$XDG_CACHE_HOME/wbsim/meshes``, else ``~/.cache/wbsim/meshes`` (created when first
    written)."""
    root = os.environ.get(CACHE_ENV)
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "wbsim")
    return Path(root).expanduser() / "meshes"


def _is_binary_stl(path: Path) -> bool:
    """A binary STL: an 84-byte header (80 bytes, then the triangle count) and 50 bytes a
    triangle, which an ASCII STL (``solid ...`` text) never matches exactly."""
    size = path.stat().st_size
    if size < 84:
        return False
    with path.open("rb") as f:
        f.seek(80)
        n = int.from_bytes(f.read(4), "little")
    return size == 84 + 50 * n


def needs_conversion(path: str | os.PathLike) -> bool:
    """Whether MuJoCo cannot read the mesh file ``path`` itself (any format but binary STL, OBJ
    and MSH)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in _MUJOCO_FORMATS:
        return True
    return suffix == ".stl" and not _is_binary_stl(p)


def _collada_asset(path: Path) -> tuple[float, str]:
    """``(unit in metres, up axis)`` of a COLLADA file's ``<asset>`` (1.0 and ``"Y_UP"``, the
    COLLADA defaults, where it says nothing); reads the file only up to the end of ``<asset>``."""
    unit, up = 1.0, "Y_UP"
    for _, elem in ET.iterparse(path, events=("end",)):
        tag = elem.tag.rsplit("}", 1)[-1]
        if tag == "unit" and elem.get("meter"):
            unit = float(elem.get("meter"))
        elif tag == "up_axis" and elem.text:
            up = elem.text.strip().upper()
        elif tag == "asset":
            break
    if up not in _UP_AXIS:
        raise RobotLoadError(
            f"{path}: unknown COLLADA up axis {up!r}; known: {', '.join(_UP_AXIS)}"
        )
    return unit, up


def mujoco_mesh(path: str | os.PathLike, cache: str | os.PathLike | None = None) -> Path:
    """A mesh file MuJoCo reads with the geometry of ``path``: ``path`` itself when MuJoCo reads it
    (:func:`needs_conversion`), else a binary STL in ``cache`` (default :func:`cache_dir`),
    converted with ``trimesh`` on the first call and reused after (the name holds a hash of the
    file's content). Vertices are in metres in the file's frame, z up (COLLADA's unit and up axis
    applied; every node of a COLLADA scene with its transform).

    Raises:
        RobotLoadError: the file does not exist, ``trimesh`` is not installed, or the file holds no
            triangles or cannot be read (the message names the file).
    """
    src = Path(path)
    if not src.is_file():
        raise RobotLoadError(f"mesh file not found: {src}")
    if not needs_conversion(src):
        return src
    data = src.read_bytes()
    digest = hashlib.sha256(data + _CONVERTER_VERSION.encode()).hexdigest()[:24]
    out = Path(cache) if cache is not None else cache_dir()
    target = out / f"{src.stem}-{digest}.stl"
    if target.is_file():
        return target
    try:
        import trimesh
    except ImportError:
        raise RobotLoadError(
            f"{src}: MuJoCo cannot read this mesh format and trimesh, which "
            "converts it, is not installed (pip install trimesh pycollada)"
        ) from None
    try:
        mesh = trimesh.load(str(src), force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types for a bad or unsupported file
        raise RobotLoadError(
            f"{src}: trimesh cannot read this mesh: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise RobotLoadError(f"{src}: the mesh holds no triangles")
    if src.suffix.lower() == ".dae":
        unit, up = _collada_asset(src)
        mesh.apply_transform(_homogeneous(unit * _UP_AXIS[up]))
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    stl = mesh.export(file_type="stl")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(stl if isinstance(stl, bytes) else str(stl).encode())
        tmp.replace(target)  # atomic: a concurrent load sees the whole file or none
    except OSError as exc:
        with contextlib.suppress(OSError):  # a part written before the disk was full
            tmp.unlink()
        where = f"${CACHE_ENV}" if cache is None and os.environ.get(CACHE_ENV) else "the cache"
        raise RobotLoadError(
            f"mesh cache {out}: the converted {src.name} cannot be written there "
            f"({exc.strerror or exc}); {where} must be a writable folder: set {CACHE_ENV} "
            "to one"
        ) from None
    return target


def _homogeneous(linear: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = linear
    return out


def resolve_package_uris(text: str, base_dir: Path) -> str:
    """``text`` with every ``package://PKG/rest`` replaced by an absolute path.

    ``PKG`` is looked for under example-robot-data's ``share`` folder, the folders on
    ``ROS_PACKAGE_PATH`` and the ancestors of ``base_dir`` (a folder named ``PKG``, or holding
    one).

    Raises:
        RobotLoadError: a package found nowhere (the message names it and where it was looked for).
    """
    from wbsim.robot import example_robot_data_dir

    roots: list[Path] = []
    try:
        roots.append(example_robot_data_dir().parent.parent)  # .../share
    except RobotLoadError:
        pass
    roots += [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    roots += [base_dir, *base_dir.parents]

    def repl(match: re.Match) -> str:
        pkg, rest = match.group(1), match.group(2)
        for root in roots:
            if (root / pkg).is_dir():
                return str(root / pkg / rest)
            if root.name == pkg:
                return str(root / rest)
        raise RobotLoadError(
            f"cannot resolve package://{pkg}/{rest}: package {pkg!r} not found "
            "under example-robot-data, ROS_PACKAGE_PATH or the folders above "
            f"{base_dir}"
        )

    # (a third slash, package:///PKG/..., is read as the same URI: talos_full_v2.urdf has them)
    return re.sub(r"package:///?([^/\"']+)/([^\"'<>]+)", repl, text)


def convert_urdf_meshes(
    urdf_text: str, base_dir: Path, cache: str | os.PathLike | None = None
) -> str:
    """The URDF ``urdf_text`` with each ``<mesh filename="...">`` that MuJoCo cannot read replaced
    by its converted file (:func:`mujoco_mesh`); relative names are taken from ``base_dir``
    (``package://`` URIs must be resolved first, :func:`resolve_package_uris`). Every other byte
    of the text is kept.

    Raises:
        RobotLoadError: as :func:`mujoco_mesh`.
    """

    def repl(match: re.Match) -> str:
        name = match.group(2)
        path = Path(name) if Path(name).is_absolute() else base_dir / name
        if path.is_file() and not needs_conversion(path):
            return match.group(0)
        return f"{match.group(1)}{mujoco_mesh(path, cache)}{match.group(3)}"

    return re.sub(r"(<mesh\b[^>]*?\bfilename\s*=\s*[\"'])([^\"']+)([\"'])", repl, urdf_text)
