"""The revision list's filter, shared by the page and the API."""

from __future__ import annotations

import django_filters

from tooling.api.input import StrictFilterSet
from tooling.models import CatalogRevision


class RevisionFilterSet(StrictFilterSet):
    prompt_ref = django_filters.CharFilter(
        max_length=201,
        label="Prompt",
        help_text='The prompt\'s revisions, as "namespace/key".',
    )

    class Meta:
        model = CatalogRevision
        fields = ["prompt_ref"]
