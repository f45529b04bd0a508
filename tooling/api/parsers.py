"""The API's JSON parser: DRF's, with two more refusals (400, "JSON parse
error - ..."): a body nested too deeply to decode (Python's JSON decoder
recurses; DRF lets the ``RecursionError`` through), and an object holding a
key twice (Python's decoder keeps the last: ``{"prompt": "a", "prompt": "b"}``
started ``b``); and an integer past Python's limit of digits is refused as
such (``TOO_MANY_DIGITS``), and a number too large for a float (``1e400``,
which Python reads as infinity) too (``TOO_LARGE``)."""

from __future__ import annotations

import codecs
import json
from collections.abc import Mapping
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils.json import strict_constant

from tooling.storable_json import (
    TOO_DEEP,
    TOO_MANY_DIGITS,
    finite_float,
    too_many_digits,
    unique_keys,
)


class JSONParser(parsers.JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        # DRF's parse, with the object hook (its own takes no hook)
        # (DRF 3.18.3: no bytes-to-bytes codec such as bz2; not in its stubs)
        encoding = parsers.get_encoding(parser_context or {})  # type: ignore[attr-defined]
        try:
            return json.load(
                codecs.getreader(encoding)(stream),
                parse_constant=strict_constant if self.strict else None,
                parse_float=finite_float,
                object_pairs_hook=unique_keys,
            )
        except RecursionError:
            raise ParseError(f"JSON parse error - {TOO_DEEP}") from None
        except ValueError as error:  # DuplicateKey, and DRF's own
            message = TOO_MANY_DIGITS if too_many_digits(error) else error
            raise ParseError(f"JSON parse error - {message}") from None
