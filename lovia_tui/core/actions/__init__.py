"""Changing a lovia file: previews, their plans and guards, performing through lovia, the journal and undo."""
