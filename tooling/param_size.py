"""The size limit of a run's parameters, one rule wherever they enter.

Each parameter's value, JSON encoded, is at most ``WINK_API_MAX_PARAM_BYTES``:
a run start refuses more (the API with a 413, the admin's Run button with an
error on the page), and so does every door of a dataset's cases, whose
parameters are their runs' (``sessions_app.models.validate_case_params``; the
datasets API with a 413 naming the case).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings


def encoded_size(value: Any) -> int:
    return len(
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "replace")
    )


def too_large(members: Mapping[Any, Any]) -> str | None:
    """The first of ``members`` (a run's parameters) whose value is over
    ``WINK_API_MAX_PARAM_BYTES`` JSON encoded, said as ``name is N bytes
    encoded; each is at most L.``; ``None`` when none is."""
    limit = int(settings.WINK_API_MAX_PARAM_BYTES)
    for name, value in members.items():
        size = encoded_size(value)
        if size > limit:
            return f"{name} is {size} bytes encoded; each is at most {limit}."
    return None
