"""The soak, for as long as you like: lovia writers in 4 processes while the app
browses and acts; then every row each writer committed is checked.

Run: ``.venv/bin/python benchmarks/soak.py --seconds 600`` (see ``--help``).
Prints the counts; exit status 0 when nothing was lost, locked or raised.
The harness lives in ``tests/support/soak/`` (its test: ``tests/reliability/test_soak.py``), where a 15-second run is part of the suite.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from support.soak.harness import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
