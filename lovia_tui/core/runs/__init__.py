"""Checkpointed runs: the run list and its index, preflight, resume and replay with their console events."""
