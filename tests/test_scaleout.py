"""Episodes as Ray tasks (wbsim.scaleout, ``wbsim baseline --workers``) on a local Ray of 2 CPUs:
the same JSON as the sequential run, results in the order of the calls, bad input refused before
Ray starts. Ray is the ``[ray]`` extra: without it these tests skip, but the input checks."""

import sys
import time

import pytest

from wbsim.errors import UnknownNameError, WbsimError


@pytest.fixture(scope="module")
def ray_home(tmp_path_factory):
    """Ray keeps its authentication token in ~/.ray: a home of these tests' own (Ray's processes
    inherit it; one for the module, as Ray's token loader keeps the first token it read), never
    the user's."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        yield home


def test_ray_baseline_json_equals_the_sequential_one(tmp_path, ray_home):
    pytest.importorskip("ray")
    from wbsim.cli import main

    args = ["baseline", "--episodes", "3", "--seconds", "0.1", "--no-progress"]
    assert main([*args, "--json", str(tmp_path / "sequential.json")]) == 0
    assert main([*args, "--json", str(tmp_path / "ray.json"), "--workers", "2"]) == 0
    sequential = (tmp_path / "sequential.json").read_text()
    assert (tmp_path / "ray.json").read_text() == sequential
    assert len({e["return"] for e in __import__("json").loads(sequential)["per_episode"]}) == 3

    import ray

    assert not ray.is_initialized()  # the local Ray started for the run was stopped


def _late_first(i: int) -> int:
    """A call whose first instance finishes last."""
    if i == 0:
        time.sleep(2.0)
    return i


def test_results_come_in_the_order_of_the_calls(ray_home):
    ray = pytest.importorskip("ray")
    from wbsim.scaleout import map_calls

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    try:
        assert map_calls(_late_first, [{"i": i} for i in range(4)], workers=2) == [0, 1, 2, 3]
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_ctrl_c_carries_the_calls_finished_and_stops_ray(ray_home, monkeypatch):
    """Ctrl-C in the driver while the tasks run: the KeyboardInterrupt carries the results of
    the calls finished by then (``done``, by index), and the local Ray is stopped."""
    ray = pytest.importorskip("ray")
    from wbsim import scaleout

    collect, waits = scaleout._collect, []

    def interrupted_at_the_third_wait(*args):
        waits.append(1)
        if len(waits) == 3:
            raise KeyboardInterrupt
        return collect(*args)

    monkeypatch.setattr(scaleout, "_collect", interrupted_at_the_third_wait)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            scaleout.map_calls(_late_first, [{"i": i} for i in range(1, 7)], workers=2)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    done = info.value.done
    assert len(done) == 2 and all(done[k] == k + 1 for k in done), done  # index -> its result
    assert not ray.is_initialized()


@pytest.mark.parametrize(
    "workers,address,message",
    [
        (0, None, "workers must be an integer >= 1, got 0"),
        (True, None, "workers must be an integer >= 1, got True"),
        ("2", None, "workers must be an integer >= 1, got '2'"),
        (None, "auto", "needs a number of workers"),
    ],
)
def test_bad_workers_are_refused_before_anything_runs(workers, address, message, tmp_path):
    from wbsim.baseline import run_baseline

    with pytest.raises(WbsimError, match=message):
        run_baseline(
            "wbsim/G1Stand-v0",
            "gravity_qp",
            episodes=1,
            seconds=0.1,
            progress=False,
            workers=workers,
            address=address,
            json_path=tmp_path / "b.json",
        )
    assert not (tmp_path / "b.json").exists()


def test_unknown_names_are_refused_before_ray_starts(ray_home):
    pytest.importorskip("ray")
    from wbsim.baseline import run_baseline

    with pytest.raises(UnknownNameError, match="G1Stand-v0"):
        run_baseline("wbsim/G1Sit-v0", "gravity_qp", episodes=1, workers=2)
    with pytest.raises(UnknownNameError, match="gravity_qp"):
        run_baseline("wbsim/G1Stand-v0", "gravity", episodes=1, workers=2)
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()


def test_without_ray_installed_the_error_says_how(monkeypatch):
    import importlib.util

    from wbsim.scaleout import check_workers

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    with pytest.raises(WbsimError, match=r'pip install "wbsim\[ray\]"'):
        check_workers(2, None)
    check_workers(None, None)  # the sequential run needs no Ray


def test_a_ray_client_address_without_ray_client_says_how(monkeypatch):
    """``--address ray://HEAD:10001`` where Ray is installed without its client extra (the
    ``[ray]`` extra's ``ray``): one line naming ``ray[client]``, not Ray's ``ValueError``
    traceback from inside ``ray.init``."""
    import importlib.util

    from wbsim.scaleout import check_workers

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "grpc" else (real(name, *a) or object()),
    )
    with pytest.raises(WbsimError, match=r'ray://127.0.0.1:10001.*pip install "ray\[client\]"'):
        check_workers(2, "ray://127.0.0.1:10001")
    check_workers(2, "auto")  # a cluster's own node needs no client
    check_workers(2, None)


def test_the_local_ray_of_a_run_is_on_the_loopback_address(ray_home, tmp_path):
    """``map_calls`` in a fresh process (as ``wbsim baseline --workers`` runs it): the local Ray's
    node address is 127.0.0.1, so it listens on the loopback interface only. It was the
    machine's network address (Ray listening on every interface): ``map_calls`` imported Ray
    before ``start_ray`` could set the switch that Ray reads at import. And Ray's line about
    token authentication is not printed."""
    pytest.importorskip("ray")
    import os
    import subprocess

    (tmp_path / "nodeip.py").write_text(
        "def node_ip():\n    import ray\n\n    return ray.util.get_node_ip_address()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    env.pop("RAY_AUTH_MODE", None)
    script = (
        "import nodeip\n"
        "from wbsim.scaleout import map_calls\n"
        "print(map_calls(nodeip.node_ip, [{}], workers=1)[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "127.0.0.1"
    # Ray (2.59 on) turns token authentication on for a local Ray and said so on stderr at
    # every start; wbsim asks for it (RAY_AUTH_MODE=token), which Ray takes without the line
    assert "Token authentication" not in out.stderr, out.stderr[-2000:]


def test_an_address_where_no_cluster_answers_is_refused_at_once():
    """``--address HOST:PORT`` with nothing listening there: one line, before any episode
    (``ray.init`` retried for minutes), and a malformed address says what it expects."""
    import socket

    pytest.importorskip("ray")
    from wbsim.scaleout import check_workers

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(WbsimError, match=rf"127.0.0.1:{port}: no Ray cluster answers there"):
        check_workers(2, f"127.0.0.1:{port}")
    with pytest.raises(WbsimError, match="expected auto, HOST:PORT"):
        check_workers(2, "head-node")
    with socket.socket() as s:  # something listening: accepted (Ray's own checks come later)
        s.bind(("127.0.0.1", 0))
        s.listen()
        check_workers(2, f"127.0.0.1:{s.getsockname()[1]}")


def _raises_with_a_note() -> None:
    exc = ValueError("boom")
    exc.add_note("what was kept")
    raise exc


def test_a_note_of_a_call_that_raised_is_printed_once(ray_home):
    """Ray's exception holds the worker's traceback, its notes included, in its text, and would
    answer ``__notes__`` with them too: the note (run_episode's "raised in ...; the log ...
    holds ...") is printed once under the traceback."""
    import traceback

    ray = pytest.importorskip("ray")
    import signal

    from wbsim.scaleout import map_calls

    sigint = signal.getsignal(signal.SIGINT)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    try:
        with pytest.raises(ValueError) as info:
            map_calls(_raises_with_a_note, [{}], workers=1)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    # Ray's driver leaves no Ctrl-C handler of its own behind (the lowest allowed Ray did, and a
    # later Ctrl-C in this process no longer raised KeyboardInterrupt)
    assert signal.getsignal(signal.SIGINT) is sigint
    printed = "".join(traceback.format_exception(info.value))
    assert printed.count("what was kept") == 1
    assert info.value.cause.__notes__ == ["what was kept"]  # the worker's exception keeps it
