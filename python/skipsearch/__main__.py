"""``python -m skipsearch``: the command line of :mod:`skipsearch.cli`."""

from __future__ import annotations

import sys

from skipsearch.cli import main

if __name__ == "__main__":
    sys.exit(main())
