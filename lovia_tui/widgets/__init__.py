"""The inspector's widgets: thin views over the core's records."""
