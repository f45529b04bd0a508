"""One error shape on every API route, 500 included.

Every error the API answers is a JSON object::

    {"detail": "Invalid input.", "code": "invalid", "errors": {"params": ["..."]}}

``detail`` is a sentence for a person, ``code`` a stable string for a program,
``errors`` the messages per input field (``non_field_errors`` for the rest;
empty when the error is not about a field). DRF's exceptions reach it through
``exception_handler`` (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``); what escapes
the views (a 404 from the URL resolver, an unexpected exception, a body Django
refuses to read) through ``ApiErrorMiddleware``, for paths under ``/api/``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
SERVER_ERROR = "A server error occurred."


def error_body(
    detail: str, code: str, errors: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {"detail": str(detail), "code": code, "errors": dict(errors or {})}


class ErrorSerializer(serializers.Serializer[Any]):
    """The body of every API error (documented on every operation)."""

    detail = serializers.CharField(help_text="What went wrong, for a person.")
    code = serializers.CharField(
        help_text="A stable code: invalid, not_authenticated, authentication_failed, "
        "permission_denied, not_found, method_not_allowed, not_acceptable, "
        "unsupported_media_type, request_too_large, throttled, conflict, "
        "server_error ..."
    )
    # Named like Serializer.errors: the serializer metaclass takes a declared
    # field off the class, so nothing is shadowed at run time.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per input field (non_field_errors for the rest).",
    )


def _codes(detail: Any) -> str:
    if isinstance(detail, exceptions.ErrorDetail):
        return str(detail.code)
    return "invalid"


def _field_errors(detail: Any) -> dict[str, list[str]]:
    """DRF's nested validation detail as ``{field: [messages]}`` (nested
    fields joined with dots)."""
    found: dict[str, list[str]] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            if all(not isinstance(item, Mapping | list) for item in value):
                found.setdefault(path or "non_field_errors", []).extend(
                    str(item) for item in value
                )
            else:
                for index, inner in enumerate(value):
                    walk(inner, f"{path}.{index}" if path else str(index))
        else:
            found.setdefault(path or "non_field_errors", []).append(str(value))

    walk(detail, "")
    return found


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, answering in the one error shape."""
    if isinstance(exc, RequestDataTooBig):
        exc = RequestTooLarge()
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # unexpected: ApiErrorMiddleware answers a JSON 500
    if isinstance(exc, exceptions.ValidationError):
        errors = _field_errors(exc.detail)
        response.data = error_body("Invalid input.", "invalid", errors)
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        if isinstance(detail, Mapping) and "detail" in detail:
            detail = detail["detail"]
        response.data = error_body(str(detail), _codes(detail))
    request = context.get("request")
    if request is not None:
        # In JSON whatever was negotiated: the browsable API (``Accept:
        # text/html``, ``?format=api``) rendered it as a page, which the
        # middleware could only replace with the bare status.
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
    return response


def from_django(error: Any, renamed: Mapping[str, str] | None = None) -> Any:
    """A service's ``django.core.exceptions.ValidationError`` as DRF's, keyed
    by field (``non_field_errors`` for the rest; ``renamed`` maps service
    field names to API ones)."""
    from django.core.exceptions import NON_FIELD_ERRORS
    from rest_framework.fields import get_error_detail
    from rest_framework.settings import api_settings

    detail = get_error_detail(error)
    if not isinstance(detail, dict):
        detail = {str(api_settings.NON_FIELD_ERRORS_KEY): detail}
    names = {
        NON_FIELD_ERRORS: str(api_settings.NON_FIELD_ERRORS_KEY),
        **(renamed or {}),
    }
    return exceptions.ValidationError(
        {names.get(str(key), str(key)): value for key, value in detail.items()}
    )


class RequestTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is too large."
    default_code = "request_too_large"


class Conflict(exceptions.APIException):
    status_code = 409
    default_detail = "The request conflicts with the resource's state."
    default_code = "conflict"


_STATUS_CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    411: "length_required",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "throttled",
}


class ApiErrorMiddleware:
    """Under ``/api/``: a body over ``WINK_API_MAX_BODY_BYTES`` is a 413 before
    any view reads it, one sent in chunks without a length a 411, a length
    that is not digits a 400; a Django
    error page (a 404 from the URL resolver, a 400
    for a bad Host) becomes the error shape; an unexpected exception is a
    logged 500 in the error shape, never a page with a stack."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        from django.conf import settings

        limit = int(settings.WINK_API_MAX_BODY_BYTES)
        if (
            request.method in ("POST", "PUT", "PATCH")
            and request.META.get("HTTP_TRANSFER_ENCODING")
            and not request.META.get("CONTENT_LENGTH")
        ):
            # Django reads a body by its length: one sent in chunks, without
            # one, would be read as empty (and escape the limit above).
            return JsonResponse(
                error_body(
                    "Send the body with a Content-Length: a body sent in chunks "
                    "is not read.",
                    "length_required",
                ),
                status=411,
            )
        declared = str(request.META.get("CONTENT_LENGTH") or "0").strip()
        if not (declared.isascii() and declared.isdigit()):
            # Django reads such a length as 0: the body was ignored, and the
            # answer blamed a missing field
            return JsonResponse(
                error_body(
                    "The Content-Length header must be the body's size in bytes, "
                    "digits only.",
                    "invalid",
                ),
                status=400,
            )
        digits = declared.lstrip("0") or "0"
        # (past 4,000 digits Python will not read it: past any limit anyway)
        length = int(digits) if len(digits) <= 4000 else None
        if length is None or length > limit:
            size = "past any size" if length is None else f"{length} bytes"
            return JsonResponse(
                error_body(
                    f"The request body is {size}; the API accepts at most {limit}.",
                    "request_too_large",
                ),
                status=413,
            )
        response = self.get_response(request)
        content_type = response.get("Content-Type", "")
        if response.status_code >= 400 and not content_type.startswith(
            "application/json"
        ):
            code = _STATUS_CODES.get(response.status_code, "error")
            detail = f"{response.reason_phrase or 'Error'}."
            if response.status_code >= 500:
                code, detail = "server_error", SERVER_ERROR
            replacement = JsonResponse(
                error_body(detail, code), status=response.status_code
            )
            for header in ("Allow", "Retry-After", "WWW-Authenticate"):
                if header in response:
                    replacement[header] = response[header]
            return replacement
        return response

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(
                error_body(
                    "The request body is too large for the API.", "request_too_large"
                ),
                status=413,
            )
        logger.exception("Unexpected error on %s %s", request.method, request.path)
        return JsonResponse(error_body(SERVER_ERROR, "server_error"), status=500)
