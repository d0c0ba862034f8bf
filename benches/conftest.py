"""pytest configuration of the benchmarks (not part of the default test run:
the project's ``testpaths`` is ``["tests"]``; run ``pytest benches/
--benchmark-only``)."""

import os
import sys

# Make ``instances`` importable whatever pytest's import mode is.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
