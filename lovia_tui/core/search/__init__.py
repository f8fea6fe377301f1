"""Content search: the per-file FTS index, its query language, the scan beyond it, and the plain substring scan."""
