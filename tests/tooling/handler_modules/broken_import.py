"""Fails while being imported, as a module with a bug at its top level would."""

raise RuntimeError("the handler module's configuration is missing")
