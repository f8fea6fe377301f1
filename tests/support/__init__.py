"""What the tests share: databases written by real lovia code, pilot helpers,
writer processes and agents run as subprocesses, the soak harness.

Imported as ``support.*`` (pytest puts ``tests/`` on the path); the app's own
wait, ``settle``, is :mod:`lovia_tui.pilot`.
"""
