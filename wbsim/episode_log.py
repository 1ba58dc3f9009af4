"""The on-disk format of an episode, written incrementally and crash-safe, and loading it back.

One folder per episode::

    RUN_DIR/
      config.json     what produced the run (env, controller, options, seed, versions); written first
      columns.json    the step table's schema: {"columns": [...], "units": {...}, "dtype": "float64"}
      steps.f64       the step table: raw little-endian float64, row-major, len(columns) values a row
      steps.parquet   the same table as Parquet (written when the log closes; :func:`write_parquet`)
      events.jsonl    one JSON object per event, one per line
      summary.json    counts per event kind, worst magnitudes, first times, episode metrics; written at
                      the end, including after an exception or Ctrl-C ("status" says how it ended)

Everything loads with numpy and the standard library alone, no pickle::

    cols = json.load(open(f"{run}/columns.json"))["columns"]
    steps = np.fromfile(f"{run}/steps.f64", dtype="<f8")
    steps = steps[: len(steps) // len(cols) * len(cols)].reshape(-1, len(cols))

(:func:`load_run` does exactly this; a trailing partial row, possible after a kill or a full disk, is
dropped.) Rows are written to disk in blocks as the run goes (a chunk of steps at a time) and events
at once, so after an exception, ``kill -INT`` or a full disk, what was logged up to then is on disk
and loads.

``steps.f64`` is the truth while the run goes. When the log closes, the table is also written as
``steps.parquet`` (pyarrow; one float64 column per step-table column, same names and order, each
column's unit in its field metadata under ``unit``, ``config.json`` in the schema metadata under
``wbsim.config``), which pandas, polars, DuckDB and PlotJuggler open::

    import pandas as pd
    df = pd.read_parquet(f"{run}/steps.parquet")

A run killed before it closed (``kill -9``, power loss) has no Parquet file:
:func:`write_parquet` makes it from ``steps.f64``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from wbsim.errors import WbsimError, check_writable_folder
from wbsim.jsonfile import read_json, write_json

__all__ = ["EpisodeLog", "RunData", "load_run", "state_columns", "write_parquet"]

STEPS_FILE, COLUMNS_FILE, EVENTS_FILE = "steps.f64", "columns.json", "events.jsonl"
SUMMARY_FILE, CONFIG_FILE, PARQUET_FILE = "summary.json", "config.json", "steps.parquet"


#: the key of the one-entry object that stands for a value JSON cannot hold (a Python object such as
#: a plan function given as an env option): ``{"python_object": repr(value)}``
PYTHON_OBJECT_KEY = "python_object"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(v) for v in items]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else str(f)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return {PYTHON_OBJECT_KEY: repr(value)}  # e.g. a plan function given as an env option


def check_run_dir(run_dir: str | Path, overwrite: bool = False) -> Path:
    """``run_dir`` as a ``Path`` if an episode log may be written there: a new or empty folder, or
    any folder with ``overwrite`` (nothing is touched here).

    Raises:
        WbsimError: ``run_dir`` is a file; or a folder that is not empty (it holds a run or other
            files) and ``overwrite`` is false: a logged run is never replaced silently; or a
            folder that cannot be created or written.
    """
    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        raise WbsimError(f"log folder {path}: not a folder; expected a new or empty folder")
    if not overwrite and path.is_dir() and any(path.iterdir()):
        raise WbsimError(
            f"log folder {path} is not empty (it holds a run or other files); expected a "
            "new or empty folder: pick another one, or overwrite it (--overwrite on "
            "the command line, overwrite=True in Python)"
        )
    check_writable_folder(path, "log folder (--log)")  # e.g. under /proc: cannot be created
    return path


class EpisodeLog:
    """Writes one episode folder (see the module docstring). Use as a context manager.

    Args:
        run_dir: the episode folder: new or empty, or, with ``overwrite``, a used one whose previous
            run's files are then replaced or removed (a folder never mixes two runs).
        columns: names of the step table's columns (``t`` first by convention).
        units: column name -> unit string, stored in ``columns.json``.
        config: the run's configuration, stored in ``config.json`` at once.
        overwrite: allow a folder that is not empty (see :func:`check_run_dir`).

    Raises:
        WbsimError: ``run_dir`` is a file, or a folder that is not empty without ``overwrite``.
    """

    def __init__(
        self,
        run_dir: str | Path,
        columns: Sequence[str],
        units: Mapping[str, str] | None = None,
        config: Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ):
        self.dir = check_run_dir(run_dir, overwrite)
        self.dir.mkdir(parents=True, exist_ok=True)
        if len(set(columns)) != len(columns):
            raise WbsimError("duplicate column names in the step table")
        self.columns = tuple(columns)
        self.n_cols = len(self.columns)
        self.n_rows = 0
        self.n_events = 0
        write_json(self.dir / CONFIG_FILE, _jsonable(config or {}))
        write_json(
            self.dir / COLUMNS_FILE,
            {"columns": list(self.columns), "units": dict(units or {}), "dtype": "<f8"},
            indent=1,
        )
        for stale in (
            SUMMARY_FILE,
            PARQUET_FILE,
            "normal_forces.png",
            "overview.png",
            "report.html",
            "replay.mp4",
        ):  # a previous run's outputs
            (self.dir / stale).unlink(missing_ok=True)
        # unbuffered: add_rows knows how many bytes reached the file, so a failed write (full disk)
        # can be cut back to whole rows
        self._steps = open(self.dir / STEPS_FILE, "wb", buffering=0)  # noqa: SIM115  (close())
        self._bytes = 0  # bytes of whole rows in the file
        self._write_error: str | None = None  # set once a write failed: no more rows are written
        self._events = open(self.dir / EVENTS_FILE, "w")  # noqa: SIM115  (close())
        self.closed = False

    def add_rows(self, rows: np.ndarray) -> None:
        """Append rows ``(k, n_cols)`` of the step table, written to the file at once.

        Raises:
            WbsimError: rows of the wrong width (nothing is written); or the write failed (e.g. a
                full disk): the file is cut back to its last whole row (readable by
                :func:`load_run` and ``np.fromfile``) and no later row is written (the table never
                has a gap). The message names the file, the cause and the rows it holds.
        """
        rows = np.asarray(rows, dtype="<f8")
        if rows.ndim != 2 or rows.shape[1] != self.n_cols:
            raise WbsimError(
                f"rows of shape {rows.shape} for a step table of {self.n_cols} columns"
            )
        self.n_rows += len(rows)
        if self._write_error is not None or not len(rows):  # the table stopped at a whole row
            return
        data = memoryview(np.ascontiguousarray(rows).tobytes())
        row_bytes = 8 * self.n_cols
        written = 0
        try:
            while written < len(data):  # a raw write may write part of it
                written += self._steps.write(data[written:])
        except OSError as exc:
            self._bytes += written // row_bytes * row_bytes  # the whole rows that got there
            try:
                os.ftruncate(self._steps.fileno(), self._bytes)
            except OSError:
                pass
            self._write_error = f"{exc.strerror or exc}"
            raise WbsimError(
                f"{self.dir / STEPS_FILE}: writing the step table failed "
                f"({self._write_error}); it holds the first "
                f"{self._bytes // row_bytes} rows, whole"
            ) from None
        self._bytes += written

    def add_row(self, row: np.ndarray) -> None:
        """Append one row ``(n_cols,)`` (:meth:`add_rows`)."""
        self.add_rows(np.asarray(row, dtype=float)[None, :])

    def add_event(self, event: Mapping[str, Any]) -> None:
        """Append one event (a JSON-able mapping: ``kind``, ``t``, ``step``, ``where``, ...)."""
        self._events.write(json.dumps(_jsonable(event)) + "\n")
        self._events.flush()
        self.n_events += 1

    def rewrite_events(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Replace ``events.jsonl`` by ``events`` sorted by step (atomically; after :meth:`close`).

        Used at the end of an episode to store the final form of events that were updated while
        they lasted (worst magnitude, duration); until then the file holds them as they started.
        """
        ordered = sorted(events, key=lambda e: (e.get("step", 0), e.get("t", 0.0)))
        tmp = self.dir / (EVENTS_FILE + ".tmp")
        try:
            tmp.write_text("".join(json.dumps(_jsonable(e)) + "\n" for e in ordered))
            tmp.replace(self.dir / EVENTS_FILE)
        except OSError as exc:  # the events as they started stay in place
            tmp.unlink(missing_ok=True)
            raise WbsimError(
                f"{self.dir / EVENTS_FILE}: could not be rewritten "
                f"({exc.strerror or exc}); it holds the events as they started"
            ) from None
        self.n_events = len(ordered)

    @property
    def rows_written(self) -> int:
        """Whole rows in the step table file so far (:attr:`n_rows` counts every row added,
        also those buffered or dropped after a failed write)."""
        return self._bytes // (8 * self.n_cols)

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json`` (atomically: a temporary file renamed over it).

        Raises:
            WbsimError: it cannot be written (the message names it and the cause)."""
        write_json(self.dir / SUMMARY_FILE, _jsonable(summary))

    def close(self) -> None:
        """Close the files, then write ``steps.parquet`` from ``steps.f64`` (:func:`write_parquet`).

        Raises:
            WbsimError: the Parquet file could not be written (e.g. a full disk); the other files
                are closed and ``steps.f64`` holds the table.
        """
        if self.closed:
            return
        self._steps.close()
        self._events.close()
        self.closed = True
        write_parquet(self.dir)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class RunData:
    """An episode loaded back: ``steps (n, n_cols)``, ``columns``, ``events``, ``summary``, ``config``."""

    dir: Path
    columns: tuple[str, ...]
    units: dict[str, str]
    steps: np.ndarray
    events: list[dict[str, Any]]
    summary: dict[str, Any]
    config: dict[str, Any]

    def __getitem__(self, column: str) -> np.ndarray:
        """One column ``(n,)`` of the step table by name."""
        try:
            return self.steps[:, self.columns.index(column)]
        except ValueError:
            raise KeyError(f"no column {column!r}; columns: {', '.join(self.columns)}") from None

    def __contains__(self, column: object) -> bool:
        """``"com_z" in run``: the step table has that column."""
        return column in self.columns

    def prefixed(self, prefix: str) -> tuple[list[str], np.ndarray]:
        """Column names starting with ``prefix`` and their ``(n, k)`` block."""
        idx = [i for i, c in enumerate(self.columns) if c.startswith(prefix)]
        return [self.columns[i] for i in idx], self.steps[:, idx]


def check_run_folder(run_dir: str | Path) -> Path:
    """``run_dir`` as a ``Path`` if it is a run log folder (``wbsim run --log``) to read.

    Raises:
        WbsimError: it does not exist, is not a folder, or holds no run (no ``columns.json``).
    """
    d = Path(run_dir)
    if not d.exists():
        raise WbsimError(f"run folder {d} does not exist")
    if not d.is_dir():
        raise WbsimError(
            f"run folder {d} is not a folder; expected a run log folder (wbsim run --log)"
        )
    if not (d / COLUMNS_FILE).is_file():
        raise WbsimError(f"{d} is not a wbsim run folder (no {COLUMNS_FILE})")
    return d


def load_run(run_dir: str | Path) -> RunData:
    """Load an episode folder (numpy and json only).

    A trailing partial row of ``steps.f64`` is dropped; a line of ``events.jsonl`` that is not a
    JSON object (cut by a kill, damaged) is skipped with a ``UserWarning`` naming the file and the
    line numbers.

    Raises:
        WbsimError: it is not a run folder, or its ``columns.json``, ``summary.json`` or
            ``config.json`` cannot be read.
    """
    d = check_run_folder(run_dir)
    schema = read_json(d / COLUMNS_FILE, what="the log")
    cols = tuple(schema["columns"])
    raw = np.fromfile(d / STEPS_FILE, dtype="<f8") if (d / STEPS_FILE).exists() else np.empty(0)
    steps = raw[: len(raw) // len(cols) * len(cols)].reshape(-1, len(cols))
    events = []
    if (d / EVENTS_FILE).exists():
        bad = []
        for number, line in enumerate((d / EVENTS_FILE).read_text().splitlines(), start=1):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill or a full disk, or garbage
                event = None
            if isinstance(event, dict):
                events.append(event)
            elif line.strip():
                bad.append(number)
        if bad:
            lines = ", ".join(map(str, bad[:10])) + (
                f" and {len(bad) - 10} more" if bad[10:] else ""
            )
            warnings.warn(
                f"{d / EVENTS_FILE}: line{'s' if len(bad) > 1 else ''} {lines} "
                "not a JSON event (cut by a kill or a full disk, or damaged): skipped",
                stacklevel=2,
            )
    summary = read_json(d / SUMMARY_FILE, {}, what="the log")
    config = read_json(d / CONFIG_FILE, {}, what="the log")
    return RunData(d, cols, dict(schema.get("units", {})), steps, events, summary, config)


def write_parquet(run_dir: str | Path) -> Path:
    """Write ``RUN_DIR/steps.parquet``: the whole rows of ``steps.f64`` with the schema of
    ``columns.json`` (float64 columns in the same order, each column's unit as field metadata
    ``unit``) and ``config.json`` as schema metadata ``wbsim.config``. Written to a temporary file
    renamed over the target, so a reader never sees half a file. Returns its path.

    Raises:
        WbsimError: ``run_dir`` is not a run folder (no ``columns.json``); pyarrow is not
            installed; the file cannot be written (the message names it and the cause; no partial
            file is left, ``steps.f64`` is untouched).
    """
    d = Path(run_dir)
    if not (d / COLUMNS_FILE).is_file():
        raise WbsimError(f"{d} is not a wbsim run folder (no {COLUMNS_FILE})")
    target, tmp = d / PARQUET_FILE, d / (PARQUET_FILE + ".tmp")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise WbsimError(
            f"{target}: pyarrow is not installed (pip install pyarrow); "
            f"{d / STEPS_FILE} holds the table"
        ) from None
    schema = read_json(d / COLUMNS_FILE, what="the log")
    cols, units = list(schema["columns"]), dict(schema.get("units", {}))
    raw = np.fromfile(d / STEPS_FILE, dtype="<f8") if (d / STEPS_FILE).exists() else np.empty(0)
    table = np.ascontiguousarray(raw[: len(raw) // len(cols) * len(cols)].reshape(-1, len(cols)).T)
    config = (d / CONFIG_FILE).read_text() if (d / CONFIG_FILE).exists() else "{}"
    fields = [
        pa.field(c, pa.float64(), metadata={"unit": units[c]} if c in units else None) for c in cols
    ]
    arrow = pa.Table.from_arrays(
        [pa.array(column) for column in table],
        schema=pa.schema(fields, metadata={"wbsim.config": config}),
    )
    try:
        pq.write_table(arrow, tmp)
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WbsimError(
            f"{target}: could not be written ({exc.strerror or exc}); "
            f"{d / STEPS_FILE} holds the table"
        ) from None
    return target


class StepTable:
    """The step table's schema for a robot and the assembly of its rows from recorded steps.

    One row per control step. ``t`` is the time of the state the command was computed for; the
    sensed columns (``com_*``, ``sensed_*``, ``sole_min_z_*``, ``f_sim``, ``gap``, ``mode``) and the
    momentum residual describe that state (MuJoCo's contact solution of the step); the base and
    joint columns (``base_*``, ``qerr``) the state after the step, as the reward does.
    ``qpos/*`` and ``qvel/*`` are MuJoCo's whole state after the step (the state a frame of it
    draws; :func:`state_columns` names them) and ``t_after`` its time; ``planned_<foot>`` is the
    schedule's contact set at ``t``.

    Args:
        robot: the :class:`wbsim.Robot`.

    Attributes:
        columns: the column names; units: column -> unit.
    """

    def __init__(self, robot):
        feet = robot.contact_names  # the feet, then the hands
        cols = [
            "t",
            "t_after",
            "base_x",
            "base_y",
            "base_z",
            "base_qw",
            "base_qx",
            "base_qy",
            "base_qz",
            "base_tilt_deg",
            "com_x",
            "com_y",
            "com_z",
            "com_ref_x",
            "com_ref_y",
            "com_ref_z",
            "phase_index",
            "controller_time_s",
            "feasible",
            *(f"planned_{f}" for f in feet),
            *(f"assumed_{f}" for f in feet),
            *(f"sensed_{f}" for f in feet),
            *(f"sole_min_z_{f}" for f in feet),
            "momentum_residual",
            "reward",
            "push_x",
            "push_y",
            "push_z",
        ]
        units = {
            c: "m" for c in cols if c.startswith(("base_x", "base_y", "base_z", "com_", "sole_"))
        }
        units.update({f"planned_{f}": "1 (planned in contact), 0" for f in feet})
        units.update(
            t="s",
            t_after="s (time of qpos/*, qvel/*)",
            base_tilt_deg="deg",
            controller_time_s="s",
            push_x="N",
            push_y="N",
            push_z="N",
            momentum_residual="|dh/dt - external wrench - weight| / (m g), 1",
        )
        for kind, unit in (
            ("qerr", "rad"),
            ("tau", "N.m (commanded)"),
            ("tau_applied", "N.m (applied by MuJoCo: clipped to the limits)"),
        ):
            for j in robot.joint_names:
                cols.append(f"{kind}/{j}")
                units[f"{kind}/{j}"] = unit
        points = robot.contact_point_names
        for kind in ("f_cmd", "f_sim"):
            for p in points:
                for ax in "xyz":
                    cols.append(f"{kind}/{p}/{ax}")
                    units[f"{kind}/{p}/{ax}"] = (
                        "N (world frame, on the robot; f_cmd NaN where "
                        "not commanded as a point force)"
                    )
        for kind, unit in (("gap", "m"), ("mode", "0 open, 1 sticking, 2 sliding")):
            for p in points:
                cols.append(f"{kind}/{p}")
                units[f"{kind}/{p}"] = unit
        for foot in feet:
            for ax in ("fx", "fy", "fz", "tx", "ty", "tz"):
                cols.append(f"w_cmd/{foot}/{ax}")
                units[f"w_cmd/{foot}/{ax}"] = (
                    "N, N.m (commanded wrench on the robot at the foot "
                    "frame origin, world-aligned; NaN unless so "
                    "commanded)"
                )
        qpos_names, qvel_names = state_columns(robot.mj_model)
        cols += [*qpos_names, *qvel_names]
        units.update({**qpos_names, **qvel_names})
        self.columns: tuple[str, ...] = tuple(cols)
        self.units = units

    def rows(
        self, steps, sensing, metrics, momentum_relative: np.ndarray, reward: np.ndarray
    ) -> np.ndarray:
        """The rows ``(k, len(columns))`` of ``k`` recorded steps
        (:class:`wbsim.recorder.RecordedSteps`), with their decoded ``sensing``, the
        :class:`wbsim.metrics.EpisodeMetrics` (joint errors, sole heights), the relative momentum
        residual ``(k,)`` and the reward ``(k,)``."""
        from wbsim.conventions import base_tilt
        from wbsim.types import CommandStatus

        k = len(steps)
        base = steps.qpos[:, 0:7]
        parts = [
            steps.t[:, None],
            steps.t_after[:, None],
            base,
            np.degrees(base_tilt(*base[:, 3:7].T))[:, None],
            sensing.com,
            steps.com_ref,
            steps.phase_index[:, None],
            steps.controller_time[:, None],
            (steps.status == CommandStatus.SOLVED)[:, None],
            steps.planned,
            steps.assumed,
            sensing.feet_loaded,
            metrics.sole_min_z(sensing),
            momentum_relative[:, None],
            reward[:, None],
            steps.push,
            metrics.joint_errors(steps.qpos),
            steps.tau,
            steps.tau_applied,
            steps.point_forces.reshape(k, -1),
            sensing.force_world.reshape(k, -1),
            sensing.gap,
            sensing.mode,
            steps.foot_wrenches.reshape(k, -1),
            steps.qpos,
            steps.qvel,
        ]
        return np.concatenate([np.asarray(p, dtype=float) for p in parts], axis=1)


#: names of a free joint's ``qpos`` and ``qvel`` entries (MuJoCo's conventions: position and
#: quaternion ``(w, x, y, z)`` in the world; linear velocity in the world frame, angular velocity
#: in the body frame), with their units
_FREE_QPOS = (
    ("x", "m"),
    ("y", "m"),
    ("z", "m"),
    ("qw", "1"),
    ("qx", "1"),
    ("qy", "1"),
    ("qz", "1"),
)
_FREE_QVEL = (
    ("vx", "m/s, world"),
    ("vy", "m/s, world"),
    ("vz", "m/s, world"),
    ("wx", "rad/s, base frame"),
    ("wy", "rad/s, base frame"),
    ("wz", "rad/s, base frame"),
)


def state_columns(model) -> tuple[dict[str, str], dict[str, str]]:
    """Column names and units of MuJoCo's whole state ``qpos (nq,)`` and ``qvel (nv,)``, in
    MuJoCo's order: ``qpos/<name>`` and ``qvel/<name>`` per entry, so that the ``qpos/*`` columns
    of a row, in order, are ``MjData.qpos``.

    A free joint (the robot's base) gives ``qpos/base_x .. base_z, base_qw .. base_qz`` and
    ``qvel/base_vx .. base_vz`` (world frame), ``qvel/base_wx .. base_wz`` (base frame); a ball
    joint ``<joint>_qw .. _qz`` and ``<joint>_wx .. _wz``; a hinge or slide joint its own name
    (rad or m, rad/s or m/s).

    Returns:
        ``(qpos, qvel)``: dicts of column name -> unit, in state order (``len`` ``nq``, ``nv``).
    """
    import mujoco

    free, ball, slide = (
        mujoco.mjtJoint.mjJNT_FREE,
        mujoco.mjtJoint.mjJNT_BALL,
        mujoco.mjtJoint.mjJNT_SLIDE,
    )
    qpos: dict[str, str] = {}
    qvel: dict[str, str] = {}
    for j in range(model.njnt):
        kind = model.jnt_type[j]
        name = model.joint(j).name or f"joint{j}"
        if kind == free:
            prefix = "base" if j == 0 else name
            qpos.update({f"qpos/{prefix}_{a}": u for a, u in _FREE_QPOS})
            qvel.update({f"qvel/{prefix}_{a}": u for a, u in _FREE_QVEL})
        elif kind == ball:
            qpos.update({f"qpos/{name}_{a}": "1" for a in ("qw", "qx", "qy", "qz")})
            qvel.update({f"qvel/{name}_{a}": "rad/s, joint frame" for a in ("wx", "wy", "wz")})
        else:
            linear = kind == slide
            qpos[f"qpos/{name}"] = "m" if linear else "rad"
            qvel[f"qvel/{name}"] = "m/s" if linear else "rad/s"
    if len(qpos) != model.nq or len(qvel) != model.nv:
        raise WbsimError(
            f"state columns: {len(qpos)} qpos / {len(qvel)} qvel names for a model "
            f"of nq = {model.nq}, nv = {model.nv} (duplicate joint names?)"
        )
    return qpos, qvel
