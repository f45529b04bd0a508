"""The admin's datasets (with their cases and a CSV/JSON import), graders and
experiments. An experiment is created here and run from its page
(``/audit/experiments/<id>/``), where its results fill in.

Who may use them: staff with the models' permissions. Experiments follow the
pages' and the API's rule: each user sees the experiments they started (the
Auditors every one; another's is a 404), and only its author changes one, while
it is new (``running.may_change``), or deletes one.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from sessions_app.admin_base import HiddenRowsAdmin
from sessions_app.models import Dataset, DatasetCase, Experiment, Grader
from tooling.bidi import NeutralisedAdminPages
from tooling.forms.editors import quoted
from tooling.models import PromptTemplate

from . import grader_config
from .cases import MOST_CASES, import_cases
from .running import TARGET, check_size, may_change, unknown_targets


class CreatedByAdmin(NeutralisedAdminPages, admin.ModelAdmin):
    """Records who created a row (``created_by``) as it is added, and when
    (``created_at``, shown, not typed: the lists order by it). Its lists
    and read-only pages show bidi controls as marks."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        names = {field.name for field in self.model._meta.get_fields()}
        if "created_at" in names and "created_at" not in fields:
            fields.append("created_at")
        return fields

    def save_model(
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


class DatasetCaseFormSet(forms.BaseInlineFormSet):
    """A dataset's cases, at most ``MOST_CASES`` once saved (as an import
    or the API allows): cases added past it are refused. Counted from the
    database, the dataset's row locked (the admin saves in a transaction):
    the forms posted may leave out cases it holds, and an import may add
    some meanwhile. A dataset that already holds more (from before the
    limit) keeps its cases."""

    def clean(self) -> None:
        super().clean()

        def deleted(form: forms.Form) -> bool:
            return bool(getattr(form, "cleaned_data", {}).get("DELETE"))

        added = [
            form
            for form in self.forms
            if form.instance.pk is None and form.has_changed() and not deleted(form)
        ]
        if not added:
            return
        held = 0
        if self.instance.pk is not None:  # a dataset being added holds none
            lock = Dataset.objects.select_for_update().filter(pk=self.instance.pk)
            with transaction.atomic():  # (held to the admin's commit)
                list(lock.values("pk"))
            removed = sum(
                1
                for form in self.forms
                if form.instance.pk is not None and deleted(form)
            )
            held = self.instance.cases.count() - removed
        if held + len(added) > MOST_CASES:
            raise ValidationError(self._too_many(held + len(added)))

    @staticmethod
    def _too_many(count: int) -> str:
        return (
            f"A dataset holds at most {MOST_CASES} cases (an experiment runs at "
            f"most {MOST_CASES}); these would be {count}. Split them into "
            "another dataset."
        )


class DatasetCaseInline(admin.TabularInline):
    model = DatasetCase
    formset = DatasetCaseFormSet
    fields = ["position", "params", "trust_level", "expected_output", "notes"]
    extra = 1
    max_num = MOST_CASES  # the "Add another" link stops there


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="CSV (columns params, trust_level, "
        "expected_output, notes) or JSON (a list of objects with those keys)."
    )


@admin.register(Dataset)
class DatasetAdmin(CreatedByAdmin):
    list_display = ["name", "description", "created_at"]
    search_fields = ["name", "description"]
    inlines = [DatasetCaseInline]
    exclude = ["created_by"]

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<int:pk>/import/",
                self.admin_site.admin_view(self.import_view),
                name="sessions_app_dataset_import",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        # Importing adds cases to the dataset: it changes the dataset. Refused
        # before the dataset is looked up (no telling which ids exist).
        if not (
            request.user.has_perm("sessions_app.add_datasetcase")
            and self.has_change_permission(request)
        ):
            raise PermissionDenied
        dataset = get_object_or_404(Dataset, pk=pk)
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                added = import_cases(dataset, upload.read(), upload.name)
            except ValidationError as error:
                form.add_error("file", error)
            else:
                messages.success(request, f"Added {len(added)} case(s) to {dataset}.")
                return HttpResponseRedirect(
                    reverse("admin:sessions_app_dataset_change", args=[pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": Dataset._meta,
            "original": dataset,
            "title": f"Import cases into {dataset}",
            "form": form,
        }
        return TemplateResponse(
            request, "admin/sessions_app/dataset_import.html", context
        )


# What a grader's grades were given with: kept once an experiment ran with it.
KEPT = ("name", "kind", "config")


class GraderForm(forms.ModelForm):
    class Meta:
        model = Grader
        fields = ["name", "kind", "config", "description"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # compared with the stored row, not the form's (posted) initial values
        stored = Grader.objects.filter(pk=self.instance.pk).values(*KEPT).first()
        changed = [
            key
            for key in KEPT
            if stored is not None and key in cleaned and cleaned[key] != stored[key]
        ]
        if changed:
            used = _shown(self.instance.graded_experiments())
            if used:
                raise ValidationError(
                    f"This grader graded the runs of {used}: its name, kind and "
                    "config stay as they graded them (you changed "
                    f"{', '.join(changed)}). Create a new grader instead."
                )
        kind = cleaned.get("kind")
        if kind and "config" in cleaned:
            try:
                grader_config.check_entered_config(kind, cleaned["config"])
            except ValidationError as error:
                self.add_error("config", error.messages)
        return cleaned


def _shown(experiments: QuerySet[Experiment]) -> str:
    """A few experiments' names, for a message."""
    names = [f"“{name}”" for name in experiments.values_list("name", flat=True)[:6]]
    if len(names) > 5:
        names[5] = "more"
    return ", ".join(names)


@admin.register(Grader)
class GraderAdmin(NeutralisedAdminPages, admin.ModelAdmin):
    form = GraderForm
    list_display = ["name", "kind", "description"]
    list_filter = ["kind"]
    search_fields = ["name", "description"]

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # a grader that graded runs is protected: their results read its grades
        deleted, counts, needed, protected = super().get_deleted_objects(objs, request)
        for grader in objs:
            used = _shown(grader.graded_experiments())
            if used:
                protected.append(
                    f"Grader “{grader}”: it graded the runs of {used}, whose "
                    "results read its grades (delete those experiments first)."
                )
        return deleted, counts, needed, protected


class ExperimentForm(forms.ModelForm):
    targets_text = forms.CharField(
        label="Targets",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One per line: draft, label:<name> or a revision's hash.",
    )

    class Meta:
        model = Experiment
        fields = ["name", "dataset", "prompt_ref", "graders"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["targets_text"].initial = "\n".join(self.instance.targets)

    def clean_prompt_ref(self) -> str:
        ref = self.cleaned_data["prompt_ref"].strip()
        namespace, _, key = ref.partition("/")
        if not PromptTemplate.objects.filter(namespace=namespace, key=key).exists():
            raise ValidationError(f"No prompt template is named {quoted(ref)}.")
        return ref

    def clean_targets_text(self) -> list[str]:
        """The targets, one per line; every mistake named at once."""
        lines = [
            line.strip()
            for line in self.cleaned_data["targets_text"].splitlines()
            if line.strip()
        ]
        problems = []
        # each named once (a line repeated is said below)
        wrong = list(
            dict.fromkeys(line for line in lines if not TARGET.fullmatch(line))
        )
        if wrong:
            problems.append(
                f"Not a target: {', '.join(quoted(line) for line in wrong[:5])}. "
                "Write draft, label:<name> or a revision's 64-digit hash, one per "
                "line."
            )
        twice = sorted({line for line in lines if lines.count(line) > 1})
        if twice:
            named = ", ".join(quoted(line) for line in twice[:5])
            problems.append(f"Name each target once: {named} more than once.")
        if not lines:
            problems.append("Name at least one target.")
        if problems:
            raise ValidationError(problems)
        return lines

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("prompt_ref") and cleaned.get("targets_text"):
            for problem in unknown_targets(
                cleaned["prompt_ref"], cleaned["targets_text"]
            ):
                self.add_error("targets_text", problem)
        if cleaned.get("dataset") and cleaned.get("targets_text"):
            try:
                check_size(cleaned["dataset"], cleaned["targets_text"])
            except ValidationError as error:
                self.add_error(None, error)
        return cleaned

    def save(self, commit: bool = True) -> Any:
        self.instance.targets = self.cleaned_data["targets_text"]
        return super().save(commit)


@admin.register(Experiment)
class ExperimentAdmin(HiddenRowsAdmin, CreatedByAdmin):
    form = ExperimentForm
    list_display = ["name", "prompt_ref", "dataset", "status", "created_by", "page"]
    list_filter = ["status"]
    search_fields = ["name", "prompt_ref"]
    filter_horizontal = ["graders"]

    readonly_fields = ["status", "targets_shown"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Experiment]:
        return Experiment.objects.visible_to(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # another's experiment runs under its author's name, and a run one
        # keeps what it ran: view only
        if obj is not None and not may_change(request.user, obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.created_by_id != request.user.pk:
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> Any:
        # the bulk delete asks no row whose it is: delete one at a time
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and not self.has_change_permission(request, obj):
            return [
                "name",
                "dataset",
                "prompt_ref",
                "targets_shown",
                "graders",
                "status",
            ]
        return super().get_fields(request, obj)

    @admin.display(description="Targets")
    def targets_shown(self, obj: Experiment) -> str:
        return ", ".join(obj.targets) if obj.pk else "-"

    @admin.display(description="Results")
    def page(self, obj: Experiment) -> str:
        url = reverse("sessions_app:experiment-detail", args=[obj.pk])
        return format_html('<a href="{}">results and Run</a>', url)

    def view_on_site(self, obj: Experiment) -> str:
        return reverse("sessions_app:experiment-detail", args=[obj.pk])
