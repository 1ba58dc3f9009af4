"""Episodes as Ray tasks: on a local Ray started for the run, or on an existing Ray cluster.

:func:`map_calls` runs ``fn(**kwargs)`` for each ``kwargs`` and returns the results in the order of
the calls, whichever worker finished first, so that an aggregate of them (``wbsim baseline``'s JSON)
is the one of the sequential run: each call must depend on its arguments only (a seeded episode).
Without ``workers`` it runs the calls one after the other in this process and never imports Ray.

Ray is the optional extra ``[ray]`` (``pip install "wbsim[ray]"``). Every node of a cluster needs
wbsim and the versions of its dependencies that the driver has; results are bit-identical to the
sequential run where the nodes run the same software on the same kind of CPU.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from wbsim.errors import WbsimError

__all__ = ["check_address", "check_workers", "map_calls", "prepare_local_ray", "start_ray"]


def check_workers(workers: Any, address: str | None) -> None:
    """Raise :class:`WbsimError` unless ``workers`` is ``None`` or an integer >= 1, or if
    ``address`` is given without ``workers``; or if Ray is needed and not installed, or a
    ``ray://`` address needs Ray Client's dependencies (``ray[client]``: grpc) and they are not.
    Called before any episode runs."""
    if workers is None:
        if address is not None:
            raise WbsimError(
                f"a Ray address ({address!r}) needs a number of workers (--workers N: "
                "the episodes run at once on the cluster)"
            )
        return
    if not (type(workers) is int and workers >= 1):
        raise WbsimError(f"workers must be an integer >= 1, got {workers!r}")
    if importlib.util.find_spec("ray") is None:
        raise WbsimError(
            "--workers runs episodes on Ray, which is not installed: pip install "
            '"wbsim[ray]" (or pip install ray)'
        )
    if str(address).startswith("ray://") and importlib.util.find_spec("grpc") is None:
        raise WbsimError(
            f"--address {address}: Ray Client (ray://) needs Ray's client extra, which the "
            '[ray] extra does not install: pip install "ray[client]"; or run wbsim on a node '
            "of the cluster with --address auto"
        )
    check_address(address)


def check_address(address: str | None, timeout: float = 5.0) -> None:
    """Raise :class:`WbsimError` if ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``; ``None``
    and ``"auto"`` pass) is malformed or nothing accepts a TCP connection there within
    ``timeout`` s: ``ray.init`` would retry for minutes."""
    if address is None or address == "auto":
        return
    where = address.removeprefix("ray://")
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise WbsimError(
            f"--address {address}: expected auto, HOST:PORT or ray://HOST:PORT (e.g. "
            "127.0.0.1:6379)"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise WbsimError(
            f"--address {address}: no Ray cluster answers there ({exc.strerror or exc}); start "
            "one with `ray start --head` or, on a node of a cluster, use --address auto"
        ) from None


def map_calls(
    fn: Callable[..., Any],
    calls: Sequence[dict[str, Any]],
    workers: int | None = None,
    address: str | None = None,
    progress: bool = False,
) -> list[Any]:
    """``[fn(**kwargs) for kwargs in calls]``, on Ray with ``workers`` calls at once.

    Args:
        fn: a module-level function (Ray workers import it by name); its result must pickle.
        calls: keyword arguments of each call.
        workers: ``None``: every call in this process, in order. ``N``: Ray tasks of one CPU each,
            at most ``N`` at a time; without ``address`` on a local Ray started for the call
            with ``N`` CPUs, listening on the loopback interface only, and stopped after it (a
            Ray already initialised in this process is used as it is and left running).
        address: an existing cluster (``"auto"``, ``"HOST:6379"``, ``"ray://HOST:10001"``;
            ``ray.init``'s ``address``), left running.
        progress: a progress bar of finished calls on stderr (a terminal only).

    Raises:
        WbsimError: as :func:`check_workers`. An exception of a call is raised as Ray raises it
        (an instance of the call's exception class, with the worker's traceback and its notes in
        its text, printed once).
        KeyboardInterrupt: Ctrl-C while the Ray tasks run; it carries the calls finished by then
            as its ``done`` attribute (``{index in calls: result}``); Ray is stopped as usual.
    """
    check_workers(workers, address)
    if workers is None:
        return [fn(**kwargs) for kwargs in calls]
    # Ray's driver may install its own Ctrl-C and SIGTERM handlers and leave them after
    # ray.shutdown() (the floors' Ray did: a later Ctrl-C no longer raised KeyboardInterrupt)
    handlers = _signal_handlers()
    started = start_ray(workers, address)  # before `import ray`: see prepare_local_ray
    import ray

    bar = None
    try:
        if progress and sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(total=len(calls), unit="episode", desc="ray", leave=False)
        task = ray.remote(num_cpus=1)(fn)
        done: dict[int, Any] = {}  # index in calls -> result, as the calls finish
        index: dict[Any, int] = {}
        pending: list[Any] = []
        try:
            for i, kwargs in enumerate(calls):
                if len(pending) >= workers:  # at most `workers` calls in flight
                    pending = _collect(ray, pending, index, done, bar)
                ref = task.remote(**kwargs)
                index[ref] = i
                pending.append(ref)
            while pending:
                pending = _collect(ray, pending, index, done, bar)
        except KeyboardInterrupt as exc:  # the finished calls go with it: the caller keeps them
            exc.done = dict(done)  # type: ignore[attr-defined]
            raise
        return [done[i] for i in range(len(calls))]
    finally:
        if bar is not None:
            bar.close()
        if started:
            ray.shutdown()
        _restore_signal_handlers(handlers)


def _signal_handlers() -> dict[int, Any]:
    """The SIGINT and SIGTERM handlers now (empty outside the main thread: only it can set them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(handlers: dict[int, Any]) -> None:
    """Put back what :func:`_signal_handlers` saw (handlers set outside Python are left alone)."""
    for sig, handler in handlers.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


def prepare_local_ray(address: str | None = None) -> None:
    """Without ``address``, set what Ray reads when it is first imported (its processes inherit
    it) for the local Ray that :func:`start_ray` will start: listen on 127.0.0.1 only, not on
    the machine's network address; and token authentication asked for explicitly
    (``RAY_AUTH_MODE=token``, unless the environment sets ``RAY_AUTH_MODE``). Since Ray 2.59 a
    local Ray turns token authentication on by itself and then logs "Token authentication is
    enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out" at every start; asked
    for, it is the same authentication without the line (Ray's documented switch, read at import:
    set later, the driver and the cluster disagree and ``ray.init`` fails). As Ray does, the
    first local start writes a token to ``~/.ray/auth_token`` if there is none. Call this before
    any ``import ray`` (``ray.rllib`` too); once Ray is imported it does nothing."""
    if address is None and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def start_ray(num_cpus: int, address: str | None = None) -> bool:
    """Connect to the Ray cluster at ``address``, or start a local Ray with ``num_cpus`` CPUs that
    listens on the loopback interface only, with token authentication and without Ray's line
    about it (if Ray was not imported before: :func:`prepare_local_ray`); nothing if Ray is
    initialised already. Returns whether it connected or started (the caller then calls
    ``ray.shutdown()`` when done)."""
    prepare_local_ray(address)
    import ray

    if ray.is_initialized():
        return False
    init: dict[str, Any] = {"address": address} if address else {"num_cpus": num_cpus}
    ray.init(**init, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return True


def _note_once(exc: BaseException) -> None:
    """Keep a call's exception notes (e.g. :func:`wbsim.rollout.run_episode`'s note of what was
    kept) out of the exception Ray raises when its text already holds them: Ray's text is the
    worker's whole traceback, notes included, and its exception also answers ``__notes__`` with
    the worker's, so each note would be printed twice. The worker's exception (``exc.cause``)
    keeps them."""
    notes = getattr(exc, "__notes__", None)
    if notes:
        text = str(exc)
        exc.__notes__ = [n for n in notes if not (isinstance(n, str) and n in text)]


def _collect(ray, pending: list, index: dict, done: dict, bar) -> list:
    """Wait for one finished call, store its result under its index; the calls still pending."""
    finished, pending = ray.wait(pending, num_returns=1)
    for ref in finished:
        try:
            done[index.pop(ref)] = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            _note_once(exc)
            raise
        if bar is not None:
            bar.update(1)
    return pending
