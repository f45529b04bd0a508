"""The OpenAPI schema documents every status an operation can answer.

``AutoSchema`` adds the error responses (all in ``ErrorSerializer``'s shape) that
the framework itself can produce, so a client and a fuzzer know them:

- 400 when the operation takes a body or query parameters;
- 401 when it needs credentials; 403 when it changes something (permission or
  CSRF) or says so itself;
- 404 when its path names a resource, or its list pages with a cursor;
- 411 for a body sent in chunks without a length (POST, PUT, PATCH: the
  ``ApiErrorMiddleware`` refuses it); 413 when it takes a body; 415 for a body
  in a type it cannot parse;
- 429 when it is throttled; 500 always.

A request body that refuses unknown fields (``StrictSerializer``) says so:
``additionalProperties: false``, unless it is a response's shape too
(``closed_schema``): no component is split in two, and a response's fields
may grow.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import force_instance
from rest_framework.permissions import AllowAny

from tooling.api.errors import ErrorSerializer
from tooling.api.input import StrictSerializer

_DESCRIPTIONS = {
    "400": "Invalid input: the messages are keyed by field in `errors`.",
    "401": "No credentials, or bad ones (`WWW-Authenticate` says which scheme).",
    "403": "Not allowed (a permission, or a missing CSRF token with session "
    "authentication).",
    "404": "No such resource, or one the caller may not see.",
    "411": "The body was sent in chunks without a `Content-Length`: send one.",
    "413": "The body, or one of its values, is too large.",
    "415": "The body's media type is not accepted (send application/json).",
    "429": "Too many requests: `Retry-After` says when to try again.",
    "500": "A server error.",
}


class AutoSchema(SpectacularAutoSchema):
    def _get_filter_parameters(self) -> Any:
        # django-filter ignores an empty value (``?status=``): say so.
        parameters = super()._get_filter_parameters()
        for parameter in parameters:
            parameter["allowEmptyValue"] = True
        return parameters

    def _map_serializer(
        self, serializer: Any, direction: Any, bypass_extensions: bool = False
    ) -> Any:
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        instance = force_instance(serializer)
        if isinstance(instance, StrictSerializer) and instance.closed_schema:
            schema["additionalProperties"] = False  # a 400 names the field
        return schema

    def _get_response_bodies(self, direction: Any = "response") -> Any:
        responses = super()._get_response_bodies(direction)
        for code in self._error_codes():
            if code not in responses:
                response = self._get_response_for_code(
                    ErrorSerializer, code, direction=direction
                )
                response["description"] = _DESCRIPTIONS[code]
                responses[code] = response
        return responses

    def _error_codes(self) -> list[str]:
        codes: list[str] = []
        unsafe = self.method not in ("GET", "HEAD", "OPTIONS")
        has_query = bool(
            self._get_filter_parameters()
            or self._get_pagination_parameters()
            or any(
                getattr(parameter, "location", None) == "query"
                for parameter in self.get_override_parameters()
            )
        )
        if unsafe or has_query:
            codes.append("400")
        if not all(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            codes.append("401")
            if unsafe:
                codes.append("403")
        if "{" in self.path or self._get_pagination_parameters():
            codes.append("404")
        if self.method in ("POST", "PUT", "PATCH"):
            codes.append("411")
        if unsafe:
            codes += ["413", "415"]
        if self.view.get_throttles():
            codes.append("429")
        codes.append("500")
        return codes
