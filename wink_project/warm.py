"""A web process made ready before its first request, its start-up objects
set aside from the garbage collector (``warm_up``, called by ``wsgi.py``).

Python's full (oldest-generation) collection walks every tracked object the
process holds: after Django, DRF and the project are imported, about 180,000
of them, which took about 110 ms on the benchmark's machine, paid by whichever
request happened to trigger it (about one in 200 of the sessions list's).
Nearly all of those objects live as long as the process (modules, classes,
URL patterns, settings), so ``gc.freeze()`` moves them to a generation the
collector never walks; a full collection then costs what the requests' own
survivors cost (docs/benchmarks.md, "The tail: Python's full collection").

The URL patterns are loaded first (Django loads them at the first request
otherwise): the views, serializers and filters they import are start-up
objects too, and the first user no longer waits for them.
"""

from __future__ import annotations

import gc

from django.urls import get_resolver


def warm_up() -> None:
    """Load the URL patterns, then freeze what the process holds so far."""
    get_resolver().url_patterns  # noqa: B018 (imports every view)
    gc.collect()  # what is garbage already is freed, not frozen
    gc.freeze()
