"""Datasets, graders and experiments: run a dataset's cases against revisions
or labels and grade the sessions (docs/experiments.md)."""
