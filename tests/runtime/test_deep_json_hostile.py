"""JSON nested deeper than Python's decoder goes (it raises RecursionError,
not ValueError) is read as text that is not JSON wherever a provider's item
or a run's output is decoded, as any other text that is not JSON is."""

from __future__ import annotations

from tooling.runtime.adapters.openai.codecs.mcp import decode_arguments
from tooling.runtime.adapters.openai.local_calls import _entries

DEEP = '{"a": ' + "[" * 100_000


def test_an_mcp_calls_deep_arguments_stay_the_text_the_model_sent() -> None:
    assert decode_arguments(DEEP) == DEEP
    assert decode_arguments('{"a": [1]}') == {"a": [1]}


def test_a_shell_calls_deep_output_is_answered_as_a_refusal_that_quotes_it() -> None:
    (entry,) = _entries(DEEP, ("ls",))
    assert entry["stderr"] == DEEP
    assert entry["outcome"]["type"] == "exit" and entry["outcome"]["exit_code"] != 0
