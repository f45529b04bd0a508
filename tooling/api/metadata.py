"""What an ``OPTIONS`` request to the API answers (``DEFAULT_METADATA_CLASS``).

DRF's ``SimpleMetadata`` adds ``actions``: the fields of the serializer
``view.get_serializer()`` gives while the action is ``metadata``. For the
routes that take a body that was the wrong one: ``POST /api/sessions/``
listed the session's read-only detail, not ``prompt``, ``params``,
``trust_level``, and a decision's ``deny/`` the approval's policy reason, not
the reason to send. The OpenAPI schema (``/api/schema/``, drf-spectacular)
describes every route's body and answers from the same serializers the views
use; the ``OPTIONS`` answer names the view, what it renders and parses, and
points there instead of describing the input a second way.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework.metadata import SimpleMetadata
from rest_framework.request import Request


class SchemaMetadata(SimpleMetadata):
    def determine_actions(self, request: Request, view: Any) -> dict[str, Any]:
        return {}  # (DRF then leaves ``actions`` out)

    def determine_metadata(self, request: Request, view: Any) -> dict[str, Any]:
        metadata = super().determine_metadata(request, view)
        metadata["schema"] = request.build_absolute_uri(reverse("schema"))
        return dict(metadata)
