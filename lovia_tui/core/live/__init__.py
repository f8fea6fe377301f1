"""Following a database as other processes write it: wake-ups on commits and the tail's deltas."""
