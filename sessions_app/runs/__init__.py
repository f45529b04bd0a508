"""A run of a session: start, claim, evaluate, pause, finish, resume, sweep.

Its writes go through one door, ``runs.store`` (``RunStore``): see
docs/write-path.md.
"""
