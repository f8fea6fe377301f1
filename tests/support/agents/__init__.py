"""Programs the tests run as real subprocesses (a slow lovia writer, an action killed midway)."""
