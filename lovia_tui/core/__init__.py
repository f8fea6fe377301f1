"""The Textual-free core: opening lovia databases, reading, analysis, actions.

Subpackages by what a newcomer looks for: ``store`` (files and bounded reads),
``live`` (following commits), ``search``, ``actions`` (previews, perform, the
journal and undo), ``runs`` (the run list, preflight, resume), ``doctor``.
The modules at this level are what all of them share.
"""
