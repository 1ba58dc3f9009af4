"""``wbsim bench --quick``: it runs, exits 0, prints the table, writes a complete JSON whose figures
are positive, finite and mutually consistent. No speed is ever checked here (the figures depend on
the machine and its load)."""

import contextlib
import io
import json
import math

import numpy as np
import pytest
import qpsolvers

from wbsim.bench import QP_SOLVERS, TARGETS, measure
from wbsim.cli import main
from wbsim.errors import WbsimError

#: A controller named as a user names theirs (``package.module:Class``, with an option), which the
#: quick bench below measures beside the built-in ones (``--controller``, ``-c``).
MINE = "wbsim.controllers.gravity_qp:GravityCompensationQP"

#: Entries every run has (the optional ones may instead be listed in ``skipped``).
REQUIRED = [
    "mj_step",
    f"compute/{MINE}",
    f"loop/{MINE}/log",
    f"loop/{MINE}/nolog",
    "compute/pd",
    "loop/gravity_qp/log",
    "loop/gravity_qp/nolog",
    "lean/gravity_qp",
    "multirate/gravity_qp/k1/pd",
    "multirate/gravity_qp/k2/hold",
    "multirate/gravity_qp/k2/pd",
    "multirate/gravity_qp/k5/hold",
    "multirate/gravity_qp/k5/pd",
    "env_step/wbsim",
    "env_step/wbsim/mj_step",
    "env_step/wbsim/fs1",
    "env_step/wbsim/fs1/mj_step",
    "env_step/humanoid_v5",
    "env_step/humanoid_v5/mj_step",
    "vec/async_1",
    "vec/async_2",
    "vec/full/async_1",
    "vec/full/async_2",
    "vec/fs5/async_1",
    "vec/fs5/async_2",
] + [f"compute/gravity_qp/{s}" for s in QP_SOLVERS if s in qpsolvers.available_solvers]
OPTIONAL = [
    "compute/projected_id/pinv",
    "compute/projected_id/qp",
    "loop/projected_id/qp/log",
    "loop/projected_id/qp/nolog",
    "render/640x480",
] + [
    f"multirate/projected_id/qp/k{k}/{low}"
    for k, low in ((1, "pd"), (2, "hold"), (2, "pd"), (5, "hold"), (5, "pd"))
]


def _strict_json(text):
    def no_constant(name):  # NaN / Infinity are not JSON
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=no_constant)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "sub" / "bench.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["bench", "--quick", "--json", str(path), "--controller", MINE, "-c", "solver=daqp"]
        )
    return code, _strict_json(path.read_text()), out.getvalue()


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _entries(result):
    return {k: v for k, v in result.items() if isinstance(v, dict) and "median" in v}


def test_quick_bench_exits_0_and_writes_every_entry(quick):
    code, result, _ = quick
    assert code == 0
    m = result["machine"]
    for key in ("platform", "cpu", "cpu_count", "python", "mujoco", "date"):
        assert m[key], key
    assert result["settings"]["quick"] is True and result["settings"]["robot"] == "g1"
    for key in REQUIRED:
        assert key in result, f"{key} missing; skipped: {result['skipped']}"
    for key in OPTIONAL:
        assert key in result or any(key.startswith(s) for s in result["skipped"]), key
    assert set(_entries(result)) <= set(REQUIRED + OPTIONAL)


def test_every_figure_is_positive_and_finite(quick):
    _, result, _ = quick
    for key, e in _entries(result).items():
        for stat in ("median", "p95", "rate"):
            assert _positive(e[stat]), (key, stat, e[stat])
        if not key.startswith(("vec/", "render/")):
            assert _positive(e["cpu_median"]), key
            assert e.get("cpu_ratio") is None or _positive(e["cpu_ratio"]), key
        lo, hi = e["spread"]
        assert _positive(lo) and lo <= e["median"] <= hi, (key, e["spread"], e["median"])
        assert e["n_blocks"] >= 1 and e["p95_of"] in ("calls", "blocks")
        assert e["ratio"] is None or _positive(e["ratio"]), (key, e["ratio"])
        assert e["rate"] == pytest.approx(1.0 / e["median"])


def test_ratios_are_paired_with_the_right_reference(quick):
    _, r, _ = quick
    assert r["mj_step"]["ratio"] == 1.0

    def paired(e, ref, p=""):
        ratios = [v / w for v, w in zip(e[f"{p}block_values"], ref, strict=True)]
        assert e[f"{p}block_ratios"] == pytest.approx(ratios)
        assert e[f"{p}ratio"] == pytest.approx(float(np.median(ratios)))
        assert e[f"{p}ratio_spread"] == pytest.approx([min(ratios), max(ratios)])

    # against a raw mj_step block of the stand scene timed next to each block
    for key in (
        "compute/pd",
        "loop/gravity_qp/log",
        "loop/gravity_qp/nolog",
        f"compute/{MINE}",
        f"loop/{MINE}/log",
        f"loop/{MINE}/nolog",
        "vec/async_1",
        *(k for k in r if k.startswith("compute/gravity_qp/")),
    ):
        e = r[key]
        assert e["ratio_to"] == "mj_step" and len(e["ref_values"]) == e["n_blocks"]
        assert all(_positive(x) for x in e["ref_values"]), key
        paired(e, e["ref_values"])
        if key != "vec/async_1":  # CPU time of this process: in-process entries only
            assert all(_positive(x) for x in e["cpu_ref_values"]), key
            paired(e, e["cpu_ref_values"], "cpu_")
    # each env's own raw mj_step of the same trajectory times its frame skip
    for env in ("wbsim", "wbsim/fs1", "humanoid_v5"):
        e, raw = r[f"env_step/{env}"], r[f"env_step/{env}/mj_step"]
        paired(e, [m * e["frame_skip"] for m in raw["block_values"]])
        paired(e, [m * e["frame_skip"] for m in raw["cpu_block_values"]], "cpu_")
    # the target compares wbsim at Humanoid-v5's frame skip; wbsim's default (1) is reported too
    assert r["env_step/humanoid_v5"]["frame_skip"] == 5 and r["env_step/wbsim"]["frame_skip"] == 5
    assert r["env_step/wbsim/fs1"]["frame_skip"] == 1
    # 2 workers: throughput over 1 worker's, block by block (time of 1 over time of 2)
    for prefix in ("vec/", "vec/full/", "vec/fs5/"):
        v1, v2 = r[f"{prefix}async_1"], r[f"{prefix}async_2"]
        assert v2["block_ratios"] == pytest.approx(
            [a / b for a, b in zip(v1["block_values"], v2["block_values"], strict=True)]
        )
    assert "info_mode='lean'" in r["vec/async_2"]["what"], r["vec/async_2"]["what"]
    assert "info_mode='full'" in r["vec/full/async_2"]["what"]
    # the target entry is wbsim's default frame_skip; frame_skip 5 is reported next to it
    assert r["vec/async_2"]["frame_skip"] == 1 and r["vec/fs5/async_2"]["frame_skip"] == 5
    assert r["vec/async_2"].get("target") and not r["vec/fs5/async_2"].get("target")
    for key in ("loop/gravity_qp/log", "loop/gravity_qp/nolog"):
        e = r[key]
        assert e["env_dt"] == pytest.approx(0.002)
        assert e["realtime_factor"] == pytest.approx(e["env_dt"] / e["median"])


def test_targets_are_judged_on_the_measured_ratios(quick):
    _, r, _ = quick
    targets = r["targets"]
    assert (
        {"gravity_qp_compute", "gravity_qp_loop_log", "env_step_overhead", "async_scaling"}
        <= set(targets)
        <= set(TARGETS)
    )
    for name, t in targets.items():
        e = r[t["entry"]]
        assert t["measured"] == e["ratio"] and isinstance(t["pass"], bool)

        def ok(measured, value, name=name):
            return measured >= value if name == "async_scaling" else measured <= value

        assert t["pass"] is ok(t["measured"], t["target_value"]), name
        if name != "async_scaling":  # judged on CPU time too
            assert t["cpu_measured"] == e["cpu_ratio"]
            assert t["cpu_pass"] is ok(t["cpu_measured"], t["cpu_target_value"]), name
    # gravity_qp's target is on the fastest installed solver
    solvers = [k for k in _entries(r) if k.startswith("compute/gravity_qp/")]
    assert targets["gravity_qp_compute"]["entry"] == min(solvers, key=lambda k: r[k]["median"])
    # the env-step target is Humanoid-v5's own overhead ratio of the same run
    assert targets["env_step_overhead"]["target_value"] == r["env_step/humanoid_v5"]["ratio"]
    assert (
        targets["env_step_overhead"]["cpu_target_value"] == r["env_step/humanoid_v5"]["cpu_ratio"]
    )
    assert targets["gravity_qp_loop_log"]["cpu_target_value"] == 4.0


def test_raw_mj_step_is_timed_on_a_standing_robot_in_contact(quick):
    _, r, _ = quick
    mj = r["mj_step"]
    assert mj["contacts"][0] >= 8  # 4 sole spheres per foot touch the floor throughout
    assert mj["max_base_z_change_m"] < 0.005  # held up by the constant torques within a block
    assert mj["timestep"] == pytest.approx(0.002)


def test_table_lists_every_entry_and_a_verdict_per_target(quick):
    _, r, out = quick
    assert r["machine"]["mujoco"] in out and r["machine"]["platform"] in out
    for key in _entries(r):
        assert key in out
    for name, t in r["targets"].items():
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(name))
        assert f"): {'PASS' if t['pass'] else 'MISS'}" in line
        if t["cpu_pass"] is not None:
            assert f"cpu {t['cpu_measured']:.2f}" in line
            assert line.endswith("PASS" if t["cpu_pass"] else "MISS")


def test_measure_statistics_and_bad_timings():
    e = measure("x", "call", [2.0, 1.0, 3.0], calls=[1.0] * 19 + [100.0])
    assert e["median"] == 2.0 and e["spread"] == [1.0, 3.0] and e["rate"] == 0.5
    assert e["p95_of"] == "calls" and e["call_median"] == 1.0
    assert e["p95"] == pytest.approx(1.0 + 0.05 * 99.0)  # numpy's linear interpolation at 95 %
    assert measure("x", "step", [1.0, 2.0])["p95_of"] == "blocks"
    for bad in ([], [0.0], [float("nan")], [-1.0]):
        with pytest.raises(WbsimError, match="no valid timing"):
            measure("x", "step", bad)


def test_unknown_robot_exits_2(capsys):
    assert main(["bench", "--robot", "nope", "--quick"]) == 2
    assert "nope" in capsys.readouterr().err


def test_your_controller_is_measured_with_its_options(quick):
    """``--controller package.module:Class -c key=value``: the user's controller is timed (its
    compute on the same states as the built-in ones, its closed loop with and without the log),
    with the option it was given, and the table shows it."""
    _, r, out = quick
    assert r[f"compute/{MINE}"]["what"] == f"{MINE} compute solver=daqp"
    assert r[f"compute/{MINE}"]["feasible_fraction"] == 1.0  # it ran, as gravity_qp with daqp
    assert r[f"loop/{MINE}/log"]["what"].endswith(f"{MINE} solver=daqp, logging")
    assert not r[f"loop/{MINE}/log"]["fell"]
    assert f"compute/{MINE}  " in out  # its row, the key column wide enough for it


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-c", "kp=1"], "need a controller to measure (--controller)"),
        (["--controller", "nope"], "unknown controller 'nope'"),
        (["--controller", "pd", "-c", "kpp=1"], "unknown option 'kpp' of controller 'pd'"),
    ],
)
def test_a_controller_that_cannot_be_measured_is_refused_before_the_bench(
    args, needle, monkeypatch, capsys, tmp_path
):
    import wbsim.bench as B

    def no_bench(*a, **k):
        raise AssertionError("the bench started")

    monkeypatch.setattr(B, "_collect", no_bench)
    assert main(["bench", "--quick", "--json", str(tmp_path / "b.json"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and needle in err, err
    assert not (tmp_path / "b.json").exists()


def test_a_controller_that_does_not_import_is_skipped_with_a_note(monkeypatch, tmp_path):
    from wbsim import controllers

    monkeypatch.setitem(controllers.CONTROLLERS, "projected_id", "wbsim.controllers.nope:Nope")
    path = tmp_path / "b.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["bench", "--quick", "--json", str(path)]) == 0
    r = _strict_json(path.read_text())
    for key in ("compute/projected_id/pinv", "compute/projected_id/qp", "loop/projected_id/qp"):
        assert key not in r and key in r["skipped"], key
    assert "nope" in r["skipped"]["compute/projected_id/qp"]
    assert "projected_id_qp_loop_log" not in r["targets"]
    assert "not measured: projected_id_qp_compute, projected_id_qp_loop_log" in out.getvalue()
    assert "compute/gravity_qp/daqp" in r and "loop/gravity_qp/log" in r  # the rest still runs


def test_a_peer_that_fails_part_way_is_skipped_with_a_note(monkeypatch, tmp_path):
    """Humanoid-v5 raising in its blocks (interleaved with wbsim's) is noted in ``skipped``; the
    wbsim env entries are still measured and the overhead target is reported as not measured."""
    import wbsim.bench as B

    block = B._env_pair_block

    def fragile(env, action, n):
        if "Humanoid" in str(getattr(env, "spec", None)):
            raise RuntimeError("peer broke")
        return block(env, action, n)

    monkeypatch.setattr(B, "_env_pair_block", fragile)
    path = tmp_path / "b.json"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["bench", "--quick", "--json", str(path)]) == 0
    r = _strict_json(path.read_text())
    assert "peer broke" in r["skipped"]["env_step/humanoid_v5"]
    assert "env_step/wbsim" in r and "env_step/wbsim/fs1" in r
    assert "env_step_overhead" not in r["targets"]
