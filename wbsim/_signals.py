"""Holding Ctrl-C and SIGTERM back while work that must not be cut in half runs (a frame going
down ffmpeg's pipe, a chunk of steps becoming metrics and log rows, closing the outputs)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["signals_deferred"]


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
