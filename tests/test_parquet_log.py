"""The step table as Parquet (pandas opens it) with MuJoCo's state, and the config that rebuilds the
scene."""

import errno
import json
import re
from pathlib import Path

import mujoco
import numpy as np
import pytest

import wbsim
from wbsim.episode_log import EpisodeLog, load_run, write_parquet
from wbsim.errors import WbsimError
from wbsim.rollout import EpisodeConfig, run_episode


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("parquet") / "run"
    run_episode(
        EpisodeConfig(
            seconds=0.1,
            log=d,
            progress=False,
            env_options={"push_magnitude": 40.0, "push_interval": 0.05},
        )
    )
    return d


def test_pandas_opens_the_run_with_every_column_unit_and_value(run_dir):
    import pandas as pd
    import pyarrow.parquet as pq

    run = load_run(run_dir)
    df = pd.read_parquet(run_dir / "steps.parquet")
    assert list(df.columns) == list(run.columns)
    assert len(df) == len(run.steps) == 50
    np.testing.assert_array_equal(df.to_numpy(), run.steps)  # NaN where f64 has NaN
    schema = pq.read_schema(run_dir / "steps.parquet")
    assert schema.field("t").metadata[b"unit"] == b"s"
    assert schema.field("qpos/base_z").metadata[b"unit"] == b"m"
    assert b"world" in schema.field("qvel/base_vx").metadata[b"unit"]
    assert json.loads(schema.metadata[b"wbsim.config"])["env"] == "wbsim/G1Stand-v0"
    assert df["push_x"].abs().max() > 0  # a push in the window


def test_qpos_columns_are_mujocos_state_after_each_step(run_dir):
    """The qpos/* columns of a row, in order, are MjData.qpos: set them and MuJoCo's kinematics
    put the base where base_x..z say; t_after is one control step after t."""
    run, robot = load_run(run_dir), wbsim.load_robot("g1")
    names, qpos = run.prefixed("qpos/")
    _, qvel = run.prefixed("qvel/")
    m = robot.mj_model
    assert qpos.shape[1] == m.nq and qvel.shape[1] == m.nv
    assert names[:7] == [f"qpos/base_{a}" for a in ("x", "y", "z", "qw", "qx", "qy", "qz")]
    assert names[7] == f"qpos/{robot.joint_names[0]}"
    d = mujoco.MjData(m)
    d.qpos[:] = qpos[-1]
    mujoco.mj_kinematics(m, d)
    np.testing.assert_array_equal(
        d.xpos[1], [run["base_x"][-1], run["base_y"][-1], run["base_z"][-1]]
    )
    np.testing.assert_allclose(run["t_after"] - run["t"], run.config["control_dt"], atol=1e-12)
    assert run["planned_left_foot"].min() == 1.0


def test_config_rebuilds_the_scene(run_dir):
    cfg = load_run(run_dir).config
    assert cfg["robot"] == "g1" and cfg["robot_config"]["description"].endswith(".urdf")
    assert cfg["timestep"] == 0.002 and cfg["frame_skip"] == 1 and cfg["seed"] == 0
    assert set(cfg["versions"]) >= {"wbsim", "mujoco", "pinocchio", "numpy", "python"}
    assert len(cfg["reset_qpos"]) == wbsim.load_robot("g1").mj_model.nq
    assert cfg["joints"]["left_knee_joint"]["effort_limit"] > 0
    # run from this git checkout: its commit
    assert cfg["git"] is None or re.fullmatch(r"[0-9a-f]{40}", cfg["git"]["commit"])


def test_a_run_that_died_gets_its_parquet_from_steps_f64(tmp_path):
    log = EpisodeLog(tmp_path, ["t", "a"], {"t": "s"})
    log.add_rows(np.array([[0.0, 1.0], [0.1, np.nan]]))
    log._steps.close()  # killed: never closed, no Parquet
    assert not (tmp_path / "steps.parquet").exists()
    import pandas as pd

    df = pd.read_parquet(write_parquet(tmp_path))
    assert df["a"].iloc[0] == 1.0 and np.isnan(df["a"].iloc[1])


def test_a_full_disk_at_the_parquet_leaves_steps_f64_and_no_partial_file(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    def full(table, path, **kw):
        Path(path).write_bytes(b"PAR1")  # a start, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    log = EpisodeLog(tmp_path, ["t"])
    log.add_row([1.0])
    with pytest.raises(WbsimError, match=r"steps.parquet: could not be written \(No space left"):
        log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "columns.json",
        "config.json",
        "events.jsonl",
        "steps.f64",
    ]
    assert load_run(tmp_path).steps.tolist() == [[1.0]]


@pytest.mark.parametrize("reader", ["polars", "duckdb"])
def test_other_readers_open_it(run_dir, reader):
    if reader == "polars":
        pl = pytest.importorskip("polars")
        assert pl.read_parquet(run_dir / "steps.parquet").height == 50
    else:
        duckdb = pytest.importorskip("duckdb")
        path = str(run_dir / "steps.parquet")
        rows = duckdb.sql(f"select count(*), max(\"qpos/base_z\") from '{path}'").fetchall()
        assert rows[0][0] == 50 and 0.5 < rows[0][1] < 1.0
