"""The Textual-free core: opening lovia databases, reading, analysis, actions."""
