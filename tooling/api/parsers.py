"""The API's JSON parser: DRF's, with a body nested too deeply to decode a 400
(Python's JSON decoder recurses; DRF lets the ``RecursionError`` through)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from tooling.storable_json import TOO_DEEP


class JSONParser(parsers.JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - {TOO_DEEP}") from None
