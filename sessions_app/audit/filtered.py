"""List pages read through a filterset (django-filter): invalid filters show
the form's errors, with the API's status (400), never an empty list that
reads as "nothing matches"."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django_filters import FilterSet


class FilteredListMixin:
    """``filtered(queryset)`` applies the request's filters (``self.filterset``
    then holds them, for the page); ``get`` answers 400 when they are not
    valid."""

    filterset_class: type[FilterSet]
    filterset: FilterSet

    def filtered(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        request: HttpRequest = getattr(self, "request")  # noqa: B009
        self.filterset = self.filterset_class(request.GET, queryset=queryset)
        if not self.filterset.is_valid():
            return queryset.none()
        return self.filterset.qs

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().get(  # type: ignore[misc]
            request, *args, **kwargs
        )
        if self.filterset.form.errors:
            response.status_code = 400
        return response
