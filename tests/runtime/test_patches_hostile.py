"""V4A patches the model could send to tie up a worker, and edge cases of
where context is found."""

from __future__ import annotations

import time

import pytest

from tooling.runtime.patches import PatchError, update_file


def test_repetitive_context_that_is_not_found_fails_fast() -> None:
    """Context that matches everywhere but at its last line made the search
    quadratic (200k lines x 20k context lines: minutes); it is linear."""
    content = "a\n" * 200_000
    diff = "@@\n" + " a\n" * 20_000 + "-b\n+c\n"
    started = time.process_time()  # CPU time: what the search costs
    with pytest.raises(PatchError, match="Context not found"):
        update_file(content, diff)
    assert time.process_time() - started < 5


def test_repetitive_context_is_found_at_its_first_occurrence() -> None:
    content = "a\n" * 50_000 + "b\n" + "a\n" * 10
    diff = "@@\n" + " a\n" * 5_000 + "-b\n+c\n"
    started = time.process_time()  # CPU time: what the search costs
    assert update_file(content, diff) == "a\n" * 50_000 + "c\n" + "a\n" * 10
    assert time.process_time() - started < 5


@pytest.mark.parametrize(
    ("content", "diff", "expected"),
    [
        # a partial match restarts inside itself (a a b after a a a b)
        ("a\na\na\nb\n", "@@\n a\n a\n-b\n+c\n", "a\na\na\nc\n"),
        # exact matching wins over looser matching even when looser is earlier
        ("  x\nx\n", "@@\n-x\n+y\n", "  x\ny\n"),
        # looser matching when no exact match exists
        ("x  \n", "@@\n-x\n+y\n", "y\n"),
        ("  x\n", "@@\n-x\n+y\n", "y\n"),
        # overlapping candidates: 'a b a b c' holds 'a b c' at index 2
        ("a\nb\na\nb\nc\n", "@@\n a\n b\n-c\n+d\n", "a\nb\na\nb\nd\n"),
        # context at the very start and the very end of the file
        ("a\nb\n", "@@\n-a\n+z\n b\n", "z\nb\n"),
        ("a\nb\n", "@@\n a\n-b\n+z\n", "a\nz\n"),
        # unicode context
        ("héllo 🌍\nß\n", "@@\n héllo 🌍\n-ß\n+ss\n", "héllo 🌍\nss\n"),
    ],
)
def test_context_search_cases(content: str, diff: str, expected: str) -> None:
    assert update_file(content, diff) == expected


def test_many_hunks_on_a_long_file_fail_fast_or_apply_fast() -> None:
    """Each hunk used to splice the whole line list and scan to the end of the
    file for an exact match before a looser one; thousands of hunks on a long
    file tied a worker up for minutes."""
    content = "x \n" * 100_000
    diff = "@@\n-x\n+y\n+y\n" * 3_000
    started = time.process_time()  # CPU time: what the search costs
    try:
        result = update_file(content, diff)
    except PatchError as error:
        assert "too costly to place" in str(error)
    else:
        assert result.startswith("y\ny\n" * 3_000 + "x \n")
    assert time.process_time() - started < 10


def test_many_small_hunks_that_match_exactly_apply_in_linear_time() -> None:
    content = "".join(f"line {n}\n" for n in range(100_000))
    diff = "".join(f"@@\n-line {n}\n+LINE {n}\n+added\n" for n in range(0, 100_000, 10))
    started = time.process_time()  # CPU time: what the search costs
    result = update_file(content, diff)
    assert time.process_time() - started < 10
    assert result.count("added\n") == 10_000
    assert result.startswith("LINE 0\nadded\nline 1\n")
