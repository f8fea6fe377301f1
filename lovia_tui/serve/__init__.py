"""``lovia-tui serve``: the same inspector in a browser, locked down.

Built on ``textual-serve`` (subclassed, not forked): :mod:`.gate` decides who
gets in, :mod:`.server` starts one app process per browser tab without a shell.
"""
