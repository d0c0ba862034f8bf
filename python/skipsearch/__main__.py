"""``python -m skipsearch``: the command line of :mod:`skipsearch.cli`."""

from __future__ import annotations

import sys


def _run() -> int:
    """:func:`skipsearch.cli.main`, with Ctrl-C while it is imported one
    line and status 130, as in ``main`` itself."""
    try:
        from skipsearch.cli import main
    except KeyboardInterrupt:
        if sys.stderr is not None:
            sys.stderr.write("skipsearch: interrupted\n")
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(_run())
