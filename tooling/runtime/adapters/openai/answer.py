"""Reading the model's answer at the end of a run: the structured output the
prompt declared, and the hosted tools' typed outputs.

A declared output is read from the answer's text: the whole text, else a
fenced ``json`` block, else the first JSON value from the first ``{``. It must
be an object; with an output type it is parsed into it (``serde.parse``),
else it must hold the schema's required keys. A hosted tool's typed output
(``HostedToolCodec.parse_output``) is a convenience, not the record: one that
cannot be built is left out, with a warning.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from ...errors import PromptEvaluationError
from ...prompt import RenderedPrompt
from ...serde import SerdeError, parse
from .codecs.base import CodecFor

logger = logging.getLogger(__name__)

_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def structured_output(rendered: RenderedPrompt, text: str, prompt_name: str) -> Any:
    """The output ``rendered`` declares, read from the answer's ``text``;
    an answer that holds none fails the evaluation of ``prompt_name``."""
    assert rendered.output is not None

    def fail(message: str) -> PromptEvaluationError:
        return PromptEvaluationError(
            message, prompt_name=prompt_name, phase="response", provider_payload=None
        )

    decoded = _decode_json(text)
    if decoded is _NOTHING:
        raise fail("No JSON object found in the model's answer.")
    if not isinstance(decoded, dict):
        raise fail("The model's answer is JSON but not an object.")
    output_type = rendered.output.output_type
    if output_type is not None:
        try:
            return parse(output_type, decoded)
        except SerdeError as error:
            raise fail(
                f"The model's answer does not match the output type: {error}"
            ) from error
    missing = [
        k for k in rendered.output.schema.get("required", []) if k not in decoded
    ]
    if missing:
        raise fail(f"The model's answer lacks required key(s): {', '.join(missing)}.")
    return decoded


def hosted_outputs(
    rendered: RenderedPrompt,
    items: Sequence[Any],
    codec_for: CodecFor,
) -> dict[str, Any]:
    """Each hosted tool's typed output, by tool name, read from every output
    item of the run (a tool whose codec makes none is left out)."""
    outputs: dict[str, Any] = {}
    for hosted in rendered.hosted_tools:
        codec = codec_for(hosted, rendered.prompt_name)
        try:
            parsed = codec.parse_output(items, hosted)
        except Exception:  # a typed output is a convenience, not the record
            logger.warning("Could not build the %s output", hosted.kind)
            continue
        if parsed is not None:
            outputs[hosted.name] = parsed
    return outputs


_NOTHING = object()


def _decode_json(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [match.strip() for match in _JSON_FENCE.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    start = text.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            return value
        except (ValueError, RecursionError):
            pass
    return _NOTHING
