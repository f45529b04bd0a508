"""Catalog revisions over the API (``/api/revisions/``): the list (filter
``prompt_ref``), one revision as people read it, and the difference of two
(``<hash>/compare/<other hash>/``, or ``<hash>/compare/live/`` against the
catalog as it is now).

Who may read them: holders of ``tooling.view_catalogrevision`` (catalog staff
given it, the Auditors group); anyone else gets 403.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import permissions, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app import access
from sessions_app.revisions import compare, queries
from sessions_app.revisions.filters import RevisionFilterSet
from sessions_app.revisions.serializers import (
    RevisionDetailSerializer,
    RevisionDiffSerializer,
    RevisionListSerializer,
)
from tooling.api.errors import ErrorSerializer
from tooling.models import CatalogRevision


class MayViewRevisions(permissions.BasePermission):
    message = access.REVISIONS_DENIED

    def has_permission(self, request: Request, view: Any) -> bool:
        return access.may_view_revisions(request.user)


def _changes(changes: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": change.pk,
            "at": change.at,
            "actor_name": change.actor_name,
            "object_repr": change.object_repr,
            "action": change.action,
            "fields": change.fields,
            "reason": change.reason,
        }
        for change in changes
    ]


def _entries(entries: Any) -> list[dict[str, Any]]:
    return [{"name": entry.name, "fields": entry.fields} for entry in entries]


def _field_changes(changes: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": change.name,
            "kind": change.kind,
            "before": change.before,
            "after": change.after,
            "lines": change.lines,
            "added": change.added,
            "removed": change.removed,
            "not_compared": change.not_compared,
        }
        for change in changes
    ]


NOT_FOUND = {404: ErrorSerializer}


@extend_schema_view(
    list=extend_schema(summary="Catalog revisions, newest first"),
    retrieve=extend_schema(
        summary="One catalog revision as the model sees it",
        responses={200: RevisionDetailSerializer, **NOT_FOUND},
    ),
)
class RevisionViewSet(viewsets.ReadOnlyModelViewSet[CatalogRevision]):
    serializer_class = RevisionListSerializer
    permission_classes = [MayViewRevisions]
    filterset_class = RevisionFilterSet
    queryset = CatalogRevision.objects.defer("data")
    lookup_field = "hash"
    lookup_value_regex = "[0-9a-f]{64}"

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        revision = self._stored(kwargs["hash"])
        view = queries.stored_side(revision).view
        before, after = queries.previous(revision), queries.following(revision)
        body = {
            "hash": revision.hash,
            "prompt_ref": revision.prompt_ref,
            "created_at": revision.created_at,
            "first_run_at": queries.first_run_at(revision),
            "previous": before.hash if before else None,
            "next": after.hash if after else None,
            "settings": view.settings,
            "parameters": view.parameters,
            "text": view.text,
            "tools_payload": view.tools_payload,
            "sections": _entries(view.sections),
            "tools": _entries(view.tools),
            "hosted_tools": _entries(view.hosted_tools),
            "policies": _entries(view.policies),
            "problems": view.problems,
            "changes": _changes(queries.changes_behind(revision))
            if access.may_view_changes(request.user)
            else None,
            "data": revision.data,
        }
        return Response(RevisionDetailSerializer(body).data)

    @extend_schema(
        summary="The difference of two revisions (or of one and the catalog now)",
        description="`other` is a revision's hash, or `live` for the prompt as "
        "the catalog holds it now (404 if it is no longer in the catalog or "
        "cannot be frozen).",
        responses={200: RevisionDiffSerializer, **NOT_FOUND},
    )
    @action(
        detail=True,
        # any value: one that names no revision is a 404 after the
        # permission check, never a 404 of the URLconf before it
        url_path=r"compare/(?P<other>[^/]+)",
        url_name="compare",
        filterset_class=None,
        pagination_class=None,
    )
    def compare(self, request: Request, hash: str, other: str) -> Response:
        revision = self._stored(hash)
        if other == queries.LIVE:
            side = queries.live_side(revision.prompt_ref)
            if isinstance(side, str):
                raise NotFound(side)
        else:
            side = queries.stored_side(self._stored(other))
        diff = compare.compare(queries.stored_side(revision).view, side.view)
        body = {
            "before": revision.hash,
            "after": side.view.hash,
            "after_is_live": side.live,
            "after_stored": side.revision is not None,
            "same": diff.same,
            "text": diff.text,
            "text_not_compared": diff.text_not_compared,
            "settings": _field_changes(diff.settings),
            "groups": [
                {
                    "key": group.key,
                    "title": group.title,
                    "entries": [
                        {
                            "name": entry.name,
                            "status": entry.status,
                            "changes": _field_changes(entry.changes),
                        }
                        for entry in group.entries
                    ],
                }
                for group in diff.groups
            ],
            "changes": _changes(queries.changes_between(revision, side))
            if access.may_view_changes(request.user)
            else None,
        }
        return Response(RevisionDiffSerializer(body).data)

    def _stored(self, digest: str) -> CatalogRevision:
        revision = queries.revision(digest)
        if revision is None:
            raise NotFound("No catalog revision has this hash.")
        return revision
