"""``ToolResult``: factories, ``render()`` and the text the model reads."""

import dataclasses
import logging
from typing import Any

import pytest

from tooling.runtime.results import ToolResult, render_tool_payload


@dataclasses.dataclass
class Plain:
    name: str
    note: str | None = None


@dataclasses.dataclass
class Friendly:
    name: str

    def render(self) -> str:
        return f"Friendly {self.name}"


@dataclasses.dataclass
class NotAString:
    count: int

    def render(self) -> int:
        return self.count


@dataclasses.dataclass
class Broken:
    name: str
    note: str | None = None

    def render(self) -> str:
        raise RuntimeError("cannot render")


@dataclasses.dataclass
class Unicode:
    text: str


@dataclasses.dataclass
class RenderAttribute:
    render: str = "not callable"


# -- factories and shape ---------------------------------------------------------


def test_results_ok_defaults_message_and_success() -> None:
    result = ToolResult.ok(Plain("a"))
    assert result == ToolResult(message="OK", value=Plain("a"), success=True)
    assert result.exclude_value_from_context is False


def test_results_ok_accepts_a_message() -> None:
    assert ToolResult.ok(None, "Done.").message == "Done."


def test_results_error_has_no_value_and_fails() -> None:
    result: ToolResult[None] = ToolResult.error("It broke.")
    assert result == ToolResult(message="It broke.", value=None, success=False)


def test_results_defaults_are_success_and_included_value() -> None:
    result: ToolResult[None] = ToolResult(message="m")
    assert result.value is None
    assert result.success is True
    assert result.exclude_value_from_context is False


def test_results_are_mutable() -> None:
    result: ToolResult[None] = ToolResult.ok(None)
    result.message = "rewritten"
    assert result.message == "rewritten"


# -- render() --------------------------------------------------------------------


def test_results_render_none_is_empty() -> None:
    assert ToolResult(message="m").render() == ""


def test_results_render_dataclass_uses_its_render() -> None:
    assert ToolResult.ok(Friendly("x")).render() == "Friendly x"


def test_results_render_non_string_render_goes_through_str() -> None:
    assert ToolResult.ok(NotAString(7)).render() == "7"


def test_results_render_raising_render_falls_back_to_json(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="tooling.runtime.results"):
        text = ToolResult.ok(Broken("b")).render()
    assert text == '{"name": "b"}'
    assert "render() of Broken failed" in caplog.text


def test_results_render_dataclass_without_render_is_json_without_none() -> None:
    assert ToolResult.ok(Plain("a")).render() == '{"name": "a"}'
    assert ToolResult.ok(Plain("a", "n")).render() == '{"name": "a", "note": "n"}'


def test_results_render_non_callable_render_attribute_is_json() -> None:
    assert ToolResult.ok(RenderAttribute()).render() == '{"render": "not callable"}'


def test_results_render_json_keeps_non_ascii() -> None:
    assert ToolResult.ok(Unicode("café")).render() == '{"text": "café"}'


def test_results_render_mapping_is_json_object() -> None:
    value = {"item": Plain("a"), "raw": b"bytes", "none": None, 1: 2}
    assert render_tool_payload(value) == (
        '{"item": {"name": "a"}, "raw": "bytes", "none": null, "1": 2}'
    )


def test_results_render_sequence_of_json_items_is_json_array() -> None:
    assert render_tool_payload([Plain("a"), Plain("b")]) == (
        '[{"name": "a"}, {"name": "b"}]'
    )
    assert render_tool_payload((1, 2.5)) == "[1, 2.5]"


def test_results_render_sequence_with_text_items_is_joined() -> None:
    value = [Friendly("a"), Plain("b"), Friendly("c")]
    assert render_tool_payload(value) == 'Friendly a\n\n{"name": "b"}\n\nFriendly c'


def test_results_render_joined_sequence_drops_empty_items() -> None:
    assert render_tool_payload(["alpha", "", None, "beta"]) == "alpha\n\nbeta"


@pytest.mark.parametrize("value", [[], ()])
def test_results_render_empty_sequence_is_empty_json_array(value: Any) -> None:
    assert render_tool_payload(value) == "[]"


def test_results_render_bytes_are_decoded_with_replacement() -> None:
    assert render_tool_payload(b"ok \xff") == "ok \ufffd"
    assert render_tool_payload(bytearray(b"raw")) == "raw"


def test_results_render_string_is_unchanged() -> None:
    assert render_tool_payload("already text") == "already text"


def test_results_render_other_values_use_str() -> None:
    assert render_tool_payload(42) == "42"
    assert render_tool_payload({3}) == "{3}"


# -- model_text() ----------------------------------------------------------------


def test_results_model_text_joins_message_and_rendered_value() -> None:
    assert ToolResult.ok(Plain("a"), "Found it.").model_text() == (
        'Found it.\n\n{"name": "a"}'
    )


def test_results_model_text_excluded_value_sends_only_message() -> None:
    result = ToolResult(message="Secret stored.", value=Plain("s"))
    result.exclude_value_from_context = True
    assert result.model_text() == "Secret stored."
    assert result.render() == '{"name": "s"}'


def test_results_model_text_empty_message_sends_only_value() -> None:
    assert ToolResult(message="", value=Friendly("x")).model_text() == "Friendly x"


def test_results_model_text_empty_value_sends_only_message() -> None:
    assert ToolResult.error("Nope.").model_text() == "Nope."
    assert ToolResult(message="Empty.", value=[]).model_text() == "Empty.\n\n[]"


def test_results_model_text_both_empty_is_empty() -> None:
    assert ToolResult(message="", value=None).model_text() == ""
