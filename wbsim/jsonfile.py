"""JSON (and other) files on disk: written atomically (a temporary file renamed over the target, so a full disk,
an exception or Ctrl-C leaves the old file or none, never half of one) and read with errors that name
the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wbsim.errors import WbsimError

__all__ = ["read_json", "write_file", "write_json"]


def write_file(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text, UTF-8, or bytes) into ``path`` atomically, creating its folder: ``path.tmp`` beside it is
    written, then renamed over ``path`` (removed if anything fails).

    Raises:
        WbsimError: the folder or the file cannot be written, naming the file and the cause.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WbsimError(f"{path}: could not be written ({exc.strerror or exc})") from None


def write_json(
    path: str | Path, obj: Any, *, indent: int | None = 2, allow_nan: bool = True
) -> None:
    """Write ``obj`` as JSON into ``path`` atomically, creating its folder.

    Args:
        path: the file; ``path.tmp`` beside it is used on the way and never left behind.
        obj: anything :func:`json.dumps` takes.
        indent: as :func:`json.dumps`.
        allow_nan: as :func:`json.dumps` (``False``: a NaN or infinity raises ``ValueError``
            before anything is written).

    Raises:
        WbsimError: the folder or the file cannot be written, naming the file and the cause.
    """
    write_file(path, json.dumps(obj, indent=indent, allow_nan=allow_nan) + "\n")


def read_json(path: str | Path, default: Any = None, *, what: str = "file") -> Any:
    """The JSON in ``path`` (``default`` if it does not exist and one is given).

    Args:
        what: how the error names what is damaged (e.g. ``"the log"``).

    Raises:
        WbsimError: it is missing (without ``default``), unreadable or not valid JSON, naming the
            file.
    """
    path = Path(path)
    if default is not None and not path.exists():
        return default
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WbsimError(f"{path}: cannot be read as JSON ({exc}); {what} is damaged") from None
