"""Rate limits every process shares, exact under concurrent requests.

A limit of ``limit`` per ``seconds`` for one key (a user and a scope, a
username trying to sign in) is ``limit`` slots in the default cache (the
database cache, or Redis: ``settings.CACHES``), each held for ``seconds`` by
the request that took it. A request goes ahead only if it takes a free slot
with ``cache.add``, which writes a key only where there is none, atomically on
both backends: two workers can never take the same slot, so however many
requests arrive at once, at most ``limit`` go ahead in any ``seconds``
(a sliding window, as DRF's own throttles count). DRF's ``SimpleRateThrottle``
reads its history and writes it back, and concurrent requests each read the
count before the others wrote theirs.

A check reads the slots in one ``get_many`` and takes one with one ``add``
(another if a concurrent request took that one first).

One interleaving is left on the database cache: Django's ``DatabaseCache``
deletes and rewrites an expired entry without a condition, so a slot whose
time runs out just as concurrent requests reach it may be taken by two of
them (one request over the limit, rarely). Redis expires keys itself: there
it cannot happen.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.core.cache import BaseCache
from django.core.cache import cache as default_cache
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle


class Slots:
    """``limit`` slots of ``key``, each held ``seconds`` once taken."""

    def __init__(
        self, key: str, limit: int, seconds: int, *, cache: BaseCache | None = None
    ) -> None:
        self.keys = [f"{key}:{index}" for index in range(limit)]
        self.seconds = seconds
        self.cache = cache if cache is not None else default_cache
        #: the slot this object took (``take``)
        self.taken: str | None = None
        #: seconds until a slot frees, when ``take`` found none
        self.wait: float | None = None

    def take(self) -> bool:
        """Take a free slot (``True``), or find them all held (``False``,
        ``wait`` says for how long yet)."""
        now = time.time()
        held: dict[str, Any] = self.cache.get_many(self.keys)
        for key in self.keys:
            if key not in held and self.cache.add(key, now, timeout=self.seconds):
                self.taken, self.wait = key, None
                return True
        # taken by the ones seen (a slot taken meanwhile frees later)
        taken_at = [value for value in held.values() if isinstance(value, float)]
        self.wait = max(0.0, min(taken_at, default=now) + self.seconds - now)
        return False

    def give_back(self) -> None:
        """Free the slot this object took (what it counted did not happen)."""
        if self.taken is not None:
            self.cache.delete(self.taken)
            self.taken = None

    def clear(self) -> None:
        """Free every slot of the key."""
        self.cache.delete_many(self.keys)
        self.taken = None


class SharedScopedRateThrottle(ScopedRateThrottle):
    """DRF's ``ScopedRateThrottle`` (the view's ``throttle_scope``, the rate of
    that scope in ``DEFAULT_THROTTLE_RATES``, per user or else per client
    address), counted in ``Slots``: shared by every worker, exact when
    requests arrive together.

    The rates are read from the settings at each request: DRF's class reads
    them once, when its module is imported, so a settings change (a test's)
    would not reach it, or would outlive the test that made it."""

    slots: Slots | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        # drf-stubs types the rates as numbers; they are strings ("30/minute").
        self.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES  # type: ignore[assignment]
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.get_cache_key(request, view)
        if self.key is None or self.num_requests is None or self.duration is None:
            return True
        self.slots = Slots(self.key, self.num_requests, self.duration, cache=self.cache)
        return self.slots.take()

    def wait(self) -> float | None:
        return self.slots.wait if self.slots is not None else None

    def give_back(self) -> None:
        """Free the slot this request took (what it counted did not happen)."""
        if self.slots is not None:
            self.slots.give_back()


# The scope of the starts a user asks for: the API's starts, replays and
# experiments (``StartThrottled``), and the pages' Run, Replay and experiment
# Run buttons (``StartSlot``). A model grader's session, started once per run
# it grades, is not counted.
START_SCOPE = "session-start"


class StartSlot:
    """One of ``user``'s run starts (the ``session-start`` rate the API counts
    them by, in the same slots), for a start from a page: ``take`` it before
    starting; ``wait`` is ``None`` to go ahead, or how many seconds until one
    frees. A start refused after that (a validation error, the daily budget)
    gives it back: the limit counts runs started, not attempts."""

    def __init__(self) -> None:
        self.slots: Slots | None = None
        self.wait: float | None = None

    @classmethod
    def take(cls, user: Any) -> StartSlot:
        slot = cls()
        # drf-stubs types the rates as numbers; they are strings ("30/minute").
        rate: Any = api_settings.DEFAULT_THROTTLE_RATES.get(START_SCOPE)
        if not rate or not getattr(user, "is_authenticated", False):
            return slot
        throttle = SharedScopedRateThrottle()
        limit, seconds = throttle.parse_rate(rate)
        if limit is None or seconds is None:
            return slot
        key = throttle.cache_format % {"scope": START_SCOPE, "ident": user.pk}
        slot.slots = Slots(key, limit, seconds, cache=throttle.cache)
        if not slot.slots.take():
            slot.wait = slot.slots.wait or 0.0
        return slot

    def give_back(self) -> None:
        """The start was refused: free the slot it took."""
        if self.slots is not None:
            self.slots.give_back()


class StartThrottled:
    """A DRF view whose starts (``is_start``) are throttled with run starts:
    each takes a slot of ``START_SCOPE`` before the view runs (DRF's
    ``initial``), and a start refused with a 4xx (permission, validation, an
    unknown prompt, the daily budget) gives it back. Otherwise a user without
    the permission to start was told "throttled" instead of why, and 30
    malformed bodies locked a client's valid starts out for a minute."""

    throttle_scope = START_SCOPE
    _start_throttle: SharedScopedRateThrottle | None = None

    def is_start(self) -> bool:
        """Whether this request starts runs (a POST; an OPTIONS does not)."""
        request = getattr(self, "request", None)
        return request is not None and request.method == "POST"

    def get_throttles(self) -> list[Any]:
        if not self.is_start():
            return []
        if self._start_throttle is None:
            self._start_throttle = SharedScopedRateThrottle()
        return [self._start_throttle]

    def finalize_response(
        self, request: Any, response: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if self._start_throttle is not None and 400 <= response.status_code < 500:
            self._start_throttle.give_back()  # nothing taken: nothing freed
        return super().finalize_response(  # type: ignore[misc]
            request, response, *args, **kwargs
        )


def start_limit_message(wait: float) -> str:
    """What a page says when its start is refused (``StartSlot.wait``)."""
    return (
        "You have started as many runs as you may for now; try again in "
        f"{max(1, math.ceil(wait))} s."
    )


__all__ = [
    "START_SCOPE",
    "SharedScopedRateThrottle",
    "Slots",
    "StartSlot",
    "StartThrottled",
    "start_limit_message",
]
