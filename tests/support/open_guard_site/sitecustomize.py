"""Installs the open guard in every Python process a test starts (see ``support/open_guard.py``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
try:
    from support import open_guard
finally:
    del sys.path[0]
open_guard.install(log_to_file=True)
