"""lovia-tui: a terminal run inspector and debugger for lovia agents."""

__version__ = "0.1.0"
