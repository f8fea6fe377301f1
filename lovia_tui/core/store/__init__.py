"""Opening lovia's files and reading them: the database, its schema, the workspace of open files, and short bounded reads by what they read."""
