"""Screens: the inspector, dialogs and help."""
