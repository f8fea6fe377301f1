"""What the UI shows, as plain data, between the core and the widgets: no Textual.

Row kinds and keys, the transcript's rows and how they are loaded, what the
user has selected. Widgets render these; screens and tests build them.
"""
