"""The admin side of the catalog's history: every save, disable and delete of a
catalog row is recorded with who, when, the fields before and after and an
optional reason; a form opened before someone else's save is refused, naming
who changed what; "History" shows the diffs."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db import models
from django.http import HttpRequest, HttpResponse, QueryDict
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode

from tooling.admin.date_drilldown import DateDrilldownGuard
from tooling.bidi import NeutralisedAdminPages, neutralised
from tooling.history import recording
from tooling.history.snapshot import DiffBudget, diff, snapshot, version
from tooling.models import CatalogChange, PromptTemplate

#: The newest changes the History page compares; the rest are in the API.
HISTORY_SHOWN = 200

REASON = "change_reason"
VERSION = "catalog_version"
FIELDS = (REASON, VERSION)


class HistoryForm(forms.ModelForm):
    """The fields every catalog form gains: a reason, and the version of the
    row the form was opened on (checked when it is saved)."""

    change_reason = forms.CharField(
        label="Reason for this change",
        required=False,
        max_length=recording.REASON_MAX,
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="Optional; kept in the row's history with your name.",
    )
    catalog_version = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and VERSION in self.fields:
            stored = recording.fresh(self.instance)
            if stored is not None:
                self.fields[VERSION].initial = version(snapshot(stored))

    @property
    def changed_data(self) -> list[str]:
        """The row's fields that changed (the admin log's message names them):
        not the reason or the version."""
        return [name for name in super().changed_data if name not in FIELDS]

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        if self.instance.pk is not None and VERSION in self.fields:
            opened = self.data.get(self.add_prefix(VERSION), "")
            if not opened:
                # a form posted without it (a script, an old page) would
                # replace whatever was saved since, unwarned
                raise forms.ValidationError(
                    "This form does not say which version it was opened on "
                    f"(no {VERSION}): reload the page and make your changes again.",
                    code="no_version",
                )
            stale = recording.stale_edit(self.instance, opened)
            if stale is not None:
                message, current = stale
                # Submitting the form again replaces their change, knowingly.
                data = QueryDict(mutable=True)
                data.update(self.data)
                data[self.add_prefix(VERSION)] = current
                self.data = data
                raise forms.ValidationError(message, code="stale")
        return cleaned


def with_history_fields(form: type[forms.ModelForm]) -> type[forms.ModelForm]:
    if issubclass(form, HistoryForm):
        return form
    return type(form.__name__, (HistoryForm, form), {"__module__": form.__module__})


def with_change_record(fieldsets: Any) -> list[Any]:
    """``fieldsets`` with the reason and version fields last, in their own
    fieldset: an admin that builds its own fieldsets passes them through this
    (fields outside the fieldsets are left out of the form)."""
    kept = [
        (name, {**opts, "fields": [f for f in opts["fields"] if f not in FIELDS]})
        for name, opts in fieldsets
    ]
    return [*kept, ("Change record", {"fields": list(FIELDS)})]


class HistoryAdminMixin(NeutralisedAdminPages, DateDrilldownGuard, admin.ModelAdmin):
    """For a catalog ``ModelAdmin``: records every change it makes
    (``tooling.history.recording``) and shows them on the History page. Its
    lists and read-only pages show bidi controls as marks (a name or a
    section's text may hold them; an editable form keeps them as typed)."""

    object_history_template: ClassVar[str | None] = "admin/tooling/catalog_history.html"

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = with_history_fields(kwargs.get("form") or self.form)
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return with_change_record(super().get_fieldsets(request, obj))

    # -- recording ----------------------------------------------------------

    def save_model(
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        stored = recording.fresh(obj) if change and obj.pk is not None else None
        obj._history = {
            "before": snapshot(stored) if stored is not None else None,
            "prompts": recording.prompts_touched(stored)
            if stored is not None
            else set(),
            "reason": (getattr(form, "cleaned_data", None) or {}).get(REASON, ""),
        }
        super().save_model(request, obj, form, change)

    def _record_saved(self, request: HttpRequest, obj: Any) -> None:
        pending = getattr(obj, "_history", None) or {}
        stored = recording.fresh(obj)
        if stored is None:
            return
        recording.record(
            stored,
            before=pending.get("before"),
            after=snapshot(stored),
            user=request.user,
            reason=pending.get("reason", ""),
            prompts=set(pending.get("prompts") or ())
            | recording.prompts_touched(stored),
        )
        obj._history = None

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._record_saved(request, obj)
        return super().log_addition(request, obj, message)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._record_saved(request, obj)
        return super().log_change(request, obj, message)

    def _deleted(
        self, rows: list[Any]
    ) -> list[tuple[Any, Any, dict[str, Any], set[str]]]:
        """Each row about to be deleted with its key (which the delete sets
        to ``None`` on the instance), snapshot and the prompts it touches."""
        return [
            (row, row.pk, snapshot(row), recording.prompts_touched(row)) for row in rows
        ]

    def _record_deleted(
        self,
        request: HttpRequest,
        gone: list[tuple[Any, Any, dict[str, Any], set[str]]],
    ) -> None:
        for row, pk, before, prompts in gone:
            recording.record(
                row,
                before=before,
                after=None,
                user=request.user,
                prompts=prompts,
                object_id=pk,
            )

    def _rows_deleted_with(self, objs: list[Any]) -> list[Any]:
        rows = getattr(self, "rows_deleted_with", None)
        return list(rows(objs)) if rows is not None else list(objs)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        gone = self._deleted(self._rows_deleted_with([obj]))
        super().delete_model(request, obj)
        self._record_deleted(request, gone)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        gone = self._deleted(self._rows_deleted_with(list(queryset)))
        super().delete_queryset(request, queryset)
        self._record_deleted(request, gone)

    # -- the History page ---------------------------------------------------

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        model: type[models.Model] = self.model
        obj = self.get_object(request, unquote(object_id))
        if obj is None or not self.has_view_or_change_permission(request, obj):
            # Django's view answers (a redirect, or 403) before any diff is
            # computed: the history is read only for who may see it.
            return super().history_view(request, object_id, extra_context)
        budget = DiffBudget()
        history = recording.history_of(obj).select_related("content_type")
        read = list(history[: HISTORY_SHOWN + 1])
        changes = [
            {
                "change": change,
                "diff": diff(change.before, change.after, budget=budget),
                "own": change.object_id == str(obj.pk)
                and change.content_type.model_class() is model,
            }
            for change in read[:HISTORY_SHOWN]
        ]
        context = {**(extra_context or {}), "catalog_changes": changes}
        if len(read) > HISTORY_SHOWN:
            context["changes_total"] = history.count()
            if request.user.has_perm("tooling.view_catalogchange"):
                context["changes_url"] = _every_change_url(obj)
        # A reason or a text may hold bidi controls: shown as marks.
        return neutralised(
            super().history_view(request, object_id, extra_context=context)
        )


def _every_change_url(obj: models.Model) -> str:
    """The API's list of every change the History page of ``obj`` shows."""
    if isinstance(obj, PromptTemplate):
        query = {"prompt": obj.ref}
    else:
        query = {"model": obj._meta.model_name or "", "object_id": str(obj.pk)}
    return f"{reverse('catalog_api:change-list')}?{urlencode(query)}"


@admin.register(CatalogChange)
class CatalogChangeAdmin(NeutralisedAdminPages, DateDrilldownGuard, admin.ModelAdmin):
    """Every recorded change of the catalog, read-only (catalog staff with
    ``view_catalogchange``; the Auditors group holds it); reasons and texts
    holding bidi controls show them as marks."""

    list_display = [
        "at",
        "object_repr",
        "content_type",
        "action",
        "actor_name",
        "reason",
    ]
    list_filter = ["action", "content_type"]
    search_fields = ["object_repr", "actor_name", "reason", "prompts__prompt_ref"]
    date_hierarchy = "at"
    list_select_related = ["content_type"]
    readonly_fields = ["changes"]
    fields = [
        "at",
        "content_type",
        "object_id",
        "object_repr",
        "action",
        "actor_name",
        "reason",
        "changes",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Fields")
    def changes(self, obj: CatalogChange) -> str:
        return render_to_string(
            "admin/tooling/catalog_change_diff.html",
            {"diff": diff(obj.before, obj.after, budget=DiffBudget())},
        )
