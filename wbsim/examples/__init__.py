"""Runnable examples: ``python -m wbsim.examples.<name> --help``."""

from __future__ import annotations

import argparse
import sys

__all__ = ["argument_parser", "interrupted"]


def argument_parser(doc: str) -> argparse.ArgumentParser:
    """An example's parser: the first line of its docstring ``doc`` as the description, and the
    rest from ``Usage::`` on as ``--help``'s epilog, as written (a raw docstring keeps its line
    continuations).

    Raises:
        ValueError: ``doc`` has no ``Usage::`` section.
    """
    return argparse.ArgumentParser(
        description=doc.splitlines()[0],
        epilog=doc[doc.index("Usage::") :].replace("Usage::", "examples:", 1),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def interrupted(program: str, exc: KeyboardInterrupt) -> int:
    """A Ctrl-C during an example's training: one line on stderr, ``PROGRAM: interrupted
    (Ctrl-C); `` and what was saved (the message ``train`` gives the ``KeyboardInterrupt``;
    ``nothing was saved`` without one); returns the exit status, 130 (128 + SIGINT)."""
    print(f"{program}: interrupted (Ctrl-C); {str(exc) or 'nothing was saved'}", file=sys.stderr)
    return 130
