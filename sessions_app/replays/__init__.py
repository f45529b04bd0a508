"""Replays: a recorded session run again against a revision, its local calls
answered from its record (``sessions_app.runs.answers``), and the comparison
of two sessions side by side (docs/replay.md)."""
