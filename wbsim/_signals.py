"""Holding Ctrl-C and SIGTERM back while work that must not be cut in half runs (a frame going
down ffmpeg's pipe, a chunk of steps becoming metrics and log rows, closing the outputs); and the
Ctrl-C of the command line and the RL examples while they start (:func:`guard_cli_start`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["end_cli_start", "guard_cli_start", "signals_deferred"]


@contextlib.contextmanager
def signals_deferred(note: str | None = None) -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the duration of the block, then raise the first that came
    again, to the handler it would have met (e.g. ``KeyboardInterrupt``); ``note`` is printed to
    stderr when the first one is held. Blocks nest (an inner block hands its signal to the outer
    one). A signal mask would not do: the kernel hands a process's signal to any thread that does
    not block it, and Python then interrupts the main thread all the same. Outside the main
    thread, where Python runs no signal handler, this does nothing; a handler not set from Python
    is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def hold(signum, frame) -> None:
        if note is not None and not came:
            print(note, file=sys.stderr, flush=True)
        came.append(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not None:  # (None: set from C, not ours to swap)
            previous[sig] = signal.signal(sig, hold)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if came:
        signal.raise_signal(came[0])


#: the programs :func:`guard_cli_start` covers: the module ``python -m`` runs -> the name their
#: messages start with (``wbsim`` is also the console script)
_PROGRAMS = {
    "wbsim.cli": "wbsim",
    "wbsim.examples.train_ppo": "train_ppo",
    "wbsim.examples.rllib_ppo": "rllib_ppo",
}

#: what :func:`_cli_program` said when :func:`guard_cli_start` took Ctrl-C (runpy then replaces
#: ``sys.argv[0]``, and the examples still import PyTorch or Ray after that)
_starting: tuple[str, list[str]] = ("wbsim", [])


def _cli_program() -> tuple[str, list[str]] | None:
    """The program's name (:data:`_PROGRAMS`) and the arguments after it if this process is one
    of wbsim's command lines starting, else ``None``: ``python -m wbsim.cli ...`` or ``python -m
    wbsim.examples.train_ppo ...`` (while runpy imports the ``wbsim`` package to find the module,
    ``sys.argv[0]`` is ``"-m"``; ``sys.orig_argv`` names the module) or the ``wbsim`` console
    script (``__main__`` is a script named ``wbsim``)."""
    argv = sys.argv
    if argv and argv[0] == "-m":
        orig = list(getattr(sys, "orig_argv", ()))
        for i, arg in enumerate(orig[1:], 1):
            if arg == "-m":
                module, rest = (orig[i + 1] if i + 1 < len(orig) else ""), orig[i + 2 :]
            elif arg.startswith("-m"):
                module, rest = arg[2:], orig[i + 1 :]
            else:
                continue
            return (_PROGRAMS[module], rest) if module in _PROGRAMS else None
        return None
    main = sys.modules.get("__main__")
    if argv and os.path.basename(argv[0]) == "wbsim" and getattr(main, "__file__", "") == argv[0]:
        return "wbsim", argv[1:]
    return None


def _interrupted_while_starting(signum, frame) -> None:
    """Ctrl-C before the command runs: one line and status 130 (what the commands end with
    after their own Ctrl-C), not the traceback of whatever module was being imported. The
    process ends here (``os._exit``): an exception raised in the middle of an extension module's
    initialisation (MuJoCo's) comes out as ``ImportError: initialization failed`` with a
    traceback, and nothing has been written yet that would need closing."""
    name, args = _starting
    if name == "wbsim":  # its subcommand: `wbsim run: ...`
        command = next((a for a in args if not a.startswith("-")), "")
        name += f" {command}" if command else ""
    with contextlib.suppress(Exception):
        sys.stdout.flush()  # (a --help already printed)
    with contextlib.suppress(Exception):
        print(
            f"{name}: interrupted (Ctrl-C) while starting; nothing was run",
            file=sys.stderr,
            flush=True,
        )
    os._exit(130)


def guard_cli_start() -> None:
    """If this process is one of wbsim's command lines starting (:func:`_cli_program`: ``wbsim``,
    the RL examples), make Ctrl-C until :func:`end_cli_start` print one line and exit with status
    130: it would otherwise raise ``KeyboardInterrupt`` inside the import of MuJoCo, Pinocchio,
    Gymnasium, PyTorch or Ray (seconds) and end in a traceback. Called first thing by ``import
    wbsim``, which ``python -m``, the console script and the examples import before any code of
    the command line runs; any other program that imports wbsim keeps Python's Ctrl-C."""
    global _starting
    program = _cli_program()
    if (
        program is not None
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler  # not one of the user's
    ):
        _starting = program
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def end_cli_start() -> None:
    """Give Ctrl-C back to Python (``KeyboardInterrupt``), which the commands handle, if
    :func:`guard_cli_start` took it; nothing otherwise."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
