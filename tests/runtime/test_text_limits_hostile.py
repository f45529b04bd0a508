"""Hostile review (h3): integers are kept exactly when this Python can write
them as text (whatever limit the deployment sets), and a list of strings is
rendered even when one of them looks like JSON nested too deeply to parse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tooling.runtime.results import render_tool_payload
from tooling.runtime.text import (
    MAX_INT_BITS,
    TOO_LONG,
    _max_int_bits,
    sendable,
    storable,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("convert", [storable, sendable])
@pytest.mark.parametrize("sign", [1, -1])
def test_every_integer_kept_can_be_written_and_the_first_one_over_is_replaced(
    convert: Callable[[Any], tuple[Any, bool]], sign: int
) -> None:
    largest = sign * (2**MAX_INT_BITS - 1)
    assert convert(largest) == (largest, False)
    json.dumps(largest)  # writable as it is kept
    assert convert(sign * 2**MAX_INT_BITS) == (TOO_LONG, True)


@pytest.mark.parametrize("limit", [640, 641, 1000, 4215, 4300, 5000, 0])
def test_the_bits_kept_under_a_digit_limit_can_be_written_under_it(
    limit: int,
) -> None:
    bits = _max_int_bits(limit)
    assert 0 < bits <= 14_000
    if limit and limit < 4215:
        assert bits > 3.32 * (limit - 2)  # not far under the limit either
    before = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(limit)
        str(2**bits - 1)
        str(-(2**bits - 1))
    finally:
        sys.set_int_max_str_digits(before)


_CHILD = """
import json, sys
from tooling.runtime.text import storable, sendable, TOO_LONG
for convert in (storable, sendable):
    for value in (10**700, -(10**700), [10**2000], {"k": 10**4000}):
        kept, altered = convert(value)
        json.dumps(kept)  # must not raise: the limit is this process's
        assert altered, value
small = 10**600
assert storable(small) == (small, False)
print("ok")
"""


def test_the_deployments_lower_digit_limit_is_the_one_applied() -> None:
    env = {**os.environ, "PYTHONINTMAXSTRDIGITS": "640"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_a_list_of_strings_is_rendered_when_one_looks_like_deep_json() -> None:
    deep = "[" * 100_000
    text = render_tool_payload([deep, "ok"])
    assert text == f"{deep}\n\nok"
