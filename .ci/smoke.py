"""Use an installed skipsearch as a new user would: the README's API example
(a doctest, its printed output compared),
the import time, and what the install pulled in.

Run it outside the source tree (so that ``import skipsearch`` finds the
installed wheel): ``python .ci/smoke.py README.md``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path


def run_readme_example(readme: str) -> tuple[int, int]:
    """Run the README's "One API call" as the doctest it is; return
    (failures, examples tried)."""
    import doctest

    code = re.search(r"## One API call\n.*?```python\n(.*?)```", readme, re.S)
    assert code, "README.md has no API example"
    test = doctest.DocTestParser().get_doctest(code.group(1), {}, "README", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    return runner.failures, runner.tries


def main() -> None:
    readme = Path(sys.argv[1]).read_text(encoding="utf-8")

    import skipsearch

    where = Path(skipsearch.__file__).resolve()
    assert "site-packages" in where.parts, f"skipsearch imported from {where}, not an install"
    print(f"skipsearch {skipsearch.__version__} from {where.parent}")

    # A fresh interpreter per run; the best of three.
    times = []
    for _ in range(3):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "import time; t = time.perf_counter(); import skipsearch; "
                "print(time.perf_counter() - t)",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        times.append(float(out.stdout))
    print(f"import skipsearch: {min(times):.3f} s (best of 3)")

    # Only the runtime dependencies: no scipy, no fpylll.
    for heavy in ("scipy", "fpylll", "cysignals", "matplotlib", "torch"):
        if importlib.util.find_spec(heavy) is not None:
            print(f"note: {heavy} is installed in this environment")

    start = time.perf_counter()
    failures, tried = run_readme_example(readme)
    assert tried and not failures, f"README example: {failures} of {tried} failed"
    print(f"README example ({tried} doctest lines) ran in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
