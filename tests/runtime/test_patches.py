"""The V4A diff applier: pure functions on text, failures the model can act on."""

from __future__ import annotations

import pytest

from tooling.runtime.patches import (
    MAX_DIFF_LENGTH,
    PatchError,
    PatchOperation,
    apply_operation,
    create_file,
    parse_hunks,
    update_file,
)

SOURCE = """\
import os


def greet(name):
    print("Hello", name)
    return name


def main():
    greet("world")
"""


# -- create_file -----------------------------------------------------------------


def test_create_file_takes_every_added_line() -> None:
    assert create_file("+# Notes\n+\n+first line\n") == "# Notes\n\nfirst line\n"


def test_create_file_without_a_final_newline_in_the_diff() -> None:
    assert create_file("+a\n+b") == "a\nb\n"


def test_create_file_of_an_empty_diff_is_an_empty_file() -> None:
    assert create_file("") == ""


def test_create_file_names_the_line_that_is_not_added() -> None:
    with pytest.raises(PatchError, match=r"Line 2 of the create_file diff .* 'oops'"):
        create_file("+a\noops\n+c\n")


# -- update_file -----------------------------------------------------------------


def test_update_with_context_lines() -> None:
    diff = """\
@@
 def greet(name):
-    print("Hello", name)
+    print("Hi", name)
     return name
"""
    assert update_file(SOURCE, diff) == SOURCE.replace('"Hello"', '"Hi"')


def test_update_anchored_at_a_line_finds_the_change_after_it() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    diff = "@@ def b():\n-    return 1\n+    return 2\n"
    assert (
        update_file(text, diff) == "def a():\n    return 1\n\ndef b():\n    return 2\n"
    )


def test_context_may_repeat_the_anchor_line() -> None:
    diff = '@@ def main():\n def main():\n-    greet("world")\n+    greet("you")\n'
    assert update_file(SOURCE, diff).endswith('    greet("you")\n')


def test_pure_insertion_after_an_anchor() -> None:
    diff = "@@ import os\n+import sys\n"
    assert update_file(SOURCE, diff).startswith("import os\nimport sys\n\n")


def test_pure_insertion_without_context_appends() -> None:
    assert update_file("a\n", "@@\n+b\n") == "a\nb\n"


def test_end_of_file_pins_the_hunk_to_the_end() -> None:
    text = "x\ny\nx\n"
    diff = "@@\n-x\n+z\n*** End of File\n"
    assert update_file(text, diff) == "x\ny\nz\n"


def test_end_of_file_that_does_not_match_the_end_fails() -> None:
    with pytest.raises(PatchError, match="must match the end of the file"):
        update_file("x\ny\n", "@@\n-x\n+z\n*** End of File\n", path="f.txt")


def test_hunks_apply_in_order_each_after_the_previous() -> None:
    text = "a\nsame\nb\nsame\n"
    diff = "@@\n a\n-same\n+one\n@@\n-same\n+two\n"
    assert update_file(text, diff) == "a\none\nb\ntwo\n"


def test_a_second_hunk_never_matches_before_the_first() -> None:
    text = "target\nmarker\n"
    diff = "@@\n-marker\n+m\n@@\n-target\n+t\n"
    with pytest.raises(PatchError, match=r"hunk 2 \(diff lines 4-6\).*after line 2"):
        update_file(text, diff, path="f.txt")


def test_trailing_whitespace_differences_still_match() -> None:
    assert update_file("a   \nb\n", "@@\n-a\n+c\n") == "c\nb\n"


def test_indentation_differences_match_last() -> None:
    assert update_file("    a\nb\n", "@@\n-a\n+c\n") == "c\nb\n"


def test_an_empty_diff_line_is_an_empty_context_line() -> None:
    text = "a\n\nb\n"
    assert update_file(text, "@@\n a\n\n-b\n+c\n") == "a\n\nc\n"


def test_crlf_files_keep_their_line_endings() -> None:
    assert update_file("a\r\nb\r\n", "@@\n-a\n+c\n") == "c\r\nb\r\n"


def test_a_file_without_final_newline_stays_without() -> None:
    assert update_file("a\nb", "@@\n-b\n+c\n") == "a\nc"


def test_unified_diff_line_numbers_in_the_header_are_ignored() -> None:
    assert update_file("a\nb\n", "@@ -1,2 +1,2 @@\n-a\n+z\n b\n") == "z\nb\n"


# -- failures the model can act on ---------------------------------------------


def test_context_not_found_names_the_hunk_its_lines_and_the_text() -> None:
    diff = "@@\n def greet(name):\n-    print('Hello', name)\n+    pass\n"
    with pytest.raises(PatchError) as caught:
        update_file(SOURCE, diff, path="app.py")
    message = str(caught.value)
    assert message.startswith(
        "Context not found in 'app.py': hunk 1 (diff lines 1-4) expects these "
        "lines in the file, and they do not occur:"
    )
    assert "'def greet(name):'" in message
    assert "\"    print('Hello', name)\"" in message
    assert message.endswith("Read the file and resend the patch with its current text.")


def test_an_anchor_that_does_not_occur() -> None:
    with pytest.raises(PatchError, match=r"anchored at 'def nope\(\):', which does"):
        update_file(SOURCE, "@@ def nope():\n-x\n+y\n", path="app.py")


def test_long_context_is_quoted_in_part() -> None:
    diff = "@@\n" + "".join(f" line {n}\n" for n in range(20)) + "-x\n+y\n"
    with pytest.raises(PatchError, match=r"\.\.\. \(15 more\)"):
        update_file("other\n", diff)


@pytest.mark.parametrize(
    ("diff", "match"),
    [
        ("garbage\n", r"Line 1 of the diff does not start with ' ', '-', '\+' or '@@'"),
        ("@@\n a\n", r"Hunk 1 \(diff lines 1-2\) changes nothing"),
        ("@@\n", "changes nothing"),
        ("", "holds no hunk"),
        ("*** Begin Patch\n", "is a patch header"),
        ("@@\n-a\n*** End of File\n+b\n", "follows '\\*\\*\\* End of File'"),
    ],
)
def test_malformed_diffs(diff: str, match: str) -> None:
    with pytest.raises(PatchError, match=match):
        update_file("a\n", diff)


def test_parse_hunks_reports_lines_and_anchors() -> None:
    hunks = parse_hunks("@@ class A:\n-a\n+b\n@@\n c\n+d\n")
    assert [(h.number, h.first_line, h.last_line, h.anchor) for h in hunks] == [
        (1, 1, 3, "class A:"),
        (2, 4, 6, ""),
    ]
    assert (hunks[1].old, hunks[1].new) == (["c"], ["c", "d"])


# -- hostile input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("diff", "match"),
    [
        ("@@\n-a\n+b\x00c\n", r"holds a NUL byte on line 3"),
        ("@@\n-a\n+\ud800\n", r"holds an invalid character on line 3"),
        ("+" + "x" * MAX_DIFF_LENGTH, r"characters; the limit is"),
    ],
)
def test_hostile_diffs_are_refused_where_they_enter(diff: str, match: str) -> None:
    with pytest.raises(PatchError, match=match):
        update_file("a\n", diff)
    with pytest.raises(PatchError, match=match):
        PatchOperation("update_file", "a.txt", diff)


def test_a_huge_file_is_patched_in_linear_time() -> None:
    text = "".join(f"line {n}\n" for n in range(200_000))
    diff = "@@\n line 199998\n-line 199999\n+last\n"
    assert update_file(text, diff).endswith("line 199998\nlast\n")


def test_a_patch_cannot_grow_a_file_past_the_limit() -> None:
    with pytest.raises(PatchError, match="would be"):
        update_file("x\n" * 1_800_000, "@@\n+" + "y" * 999_990 + "\n")


# -- operations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"type": "rename_file", "path": "a"}, "is not one of create_file"),
        ({"type": "update_file", "path": "a"}, "update_file needs a diff"),
        ({"type": "create_file", "path": "a", "diff": 3}, "needs a diff"),
        ({"type": "delete_file", "path": "a", "diff": "+x"}, "takes no diff"),
        ({"type": "delete_file", "path": 7}, "path must be a string"),
        ({"type": ["x"] * 100, "path": "a"}, r"Operation type \[.*…"),
    ],
)
def test_operation_shapes(kwargs: dict, match: str) -> None:
    with pytest.raises(PatchError, match=match):
        PatchOperation(**kwargs)


def test_apply_operation_for_each_type() -> None:
    create = PatchOperation("create_file", "a.txt", "+x\n")
    update = PatchOperation("update_file", "a.txt", "@@\n-x\n+y\n")
    delete = PatchOperation("delete_file", "a.txt")
    assert apply_operation(create, None) == "x\n"
    assert apply_operation(update, "x\n") == "y\n"
    assert apply_operation(delete, "y\n") is None


@pytest.mark.parametrize(
    ("operation", "current", "match"),
    [
        (PatchOperation("create_file", "a.txt", "+x\n"), "", "already exists"),
        (
            PatchOperation("update_file", "a.txt", "@@\n-x\n+y\n"),
            None,
            "does not exist",
        ),
        (PatchOperation("delete_file", "a.txt"), None, "does not exist"),
    ],
)
def test_apply_operation_file_missing_or_existing(
    operation: PatchOperation, current: str | None, match: str
) -> None:
    with pytest.raises(PatchError, match=match):
        apply_operation(operation, current)
