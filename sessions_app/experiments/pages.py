"""The experiment pages: the list, one experiment's results (and its Run
button), its CSV, and "add to dataset" on a session's page.

Who may see them: an experiment's author, and whoever sees every session
(the Auditors); another user's experiment is a 404. Running it needs to be
its author, to start sessions and to view datasets; grading it now (model
graders start sessions) its author who may start sessions. Reading the results
starts nothing. Adding a session to a dataset needs to see
the session and "Can add dataset case".
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views import View
from django.views.generic import DetailView, ListView

from sessions_app import access
from sessions_app.audit.bidi import NeutraliseBidiMixin
from sessions_app.models import (
    AgentSession,
    Dataset,
    DatasetCase,
    Experiment,
    validate_case_params,
)
from tooling.api.throttling import StartSlot, start_limit_message
from tooling.forms.validation import errors_in_words

from .cases import append_cases
from .results import csv_of, results_of
from .running import (
    ALREADY_RUN,
    VIEW_DATASET,
    grade_finished,
    is_runner,
    may_grade,
    may_run,
    not_gradable,
    run_experiment,
)

ADD_CASE = "sessions_app.add_datasetcase"


class ExperimentListView(LoginRequiredMixin, NeutraliseBidiMixin, ListView):
    template_name = "sessions_app/experiment_list.html"
    context_object_name = "experiments"
    paginate_by = 50

    def get_queryset(self) -> QuerySet[Experiment]:
        return Experiment.objects.visible_to(self.request.user).select_related(
            "dataset", "created_by"
        )


class ExperimentDetailView(LoginRequiredMixin, NeutraliseBidiMixin, DetailView):
    template_name = "sessions_app/experiment_detail.html"
    context_object_name = "experiment"

    def get_queryset(self) -> QuerySet[Experiment]:
        return Experiment.objects.visible_to(self.request.user).select_related(
            "dataset", "created_by"
        )

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        experiment: Experiment = self.object
        if experiment.status == Experiment.Status.RUNNING:
            grade_finished(experiment, user=experiment.created_by)
        context.update(
            results=results_of(experiment),
            may_run=may_run(self.request.user, experiment),
            may_grade=may_grade(self.request.user, experiment),
        )
        return context


class ExperimentRunView(LoginRequiredMixin, View):
    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        experiment = get_object_or_404(
            Experiment.objects.visible_to(request.user), pk=pk
        )
        if not (
            is_runner(request.user, experiment) and request.user.has_perm(VIEW_DATASET)
        ):
            raise PermissionDenied(
                "Only its author, who may start sessions, runs a new experiment."
            )
        if experiment.status != Experiment.Status.NEW:  # a double click
            messages.info(request, ALREADY_RUN)
            return HttpResponseRedirect(
                reverse("sessions_app:experiment-detail", args=[pk])
            )
        slot = StartSlot.take(request.user)  # as the API counts its starts
        if slot.wait is not None:
            messages.error(request, start_limit_message(slot.wait))
            return HttpResponseRedirect(
                reverse("sessions_app:experiment-detail", args=[pk])
            )
        try:
            runs = run_experiment(experiment, user=request.user)
        except ValidationError as error:
            slot.give_back()
            messages.error(request, " ".join(error.messages))
        else:
            started = sum(1 for run in runs if run.session_id is not None)
            refused = len(runs) - started
            text = f"Started {started} run(s)."
            if refused:
                text += f" {refused} could not start: the results say why."
            messages.info(request, text)
        return HttpResponseRedirect(
            reverse("sessions_app:experiment-detail", args=[pk])
        )


class ExperimentGradeView(LoginRequiredMixin, View):
    """``POST``: grade the finished runs now, model graders included."""

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        experiment = get_object_or_404(
            Experiment.objects.visible_to(request.user), pk=pk
        )
        if not is_runner(request.user, experiment):
            raise PermissionDenied(
                "Only its author, who may start sessions, grades it."
            )
        why_not = not_gradable(experiment)
        if why_not is not None:  # graded meanwhile (another tab, a worker)
            messages.info(request, why_not)
            return HttpResponseRedirect(
                reverse("sessions_app:experiment-detail", args=[pk])
            )
        graded = grade_finished(experiment, user=request.user, model_graders=True)
        messages.info(request, f"Graded {graded} run(s).")
        return HttpResponseRedirect(
            reverse("sessions_app:experiment-detail", args=[pk])
        )


class ExperimentCsvView(LoginRequiredMixin, View):
    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        experiment = get_object_or_404(
            Experiment.objects.visible_to(request.user), pk=pk
        )
        response = HttpResponse(
            csv_of(results_of(experiment)), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = (
            f'attachment; filename="experiment-{experiment.pk}.csv"'
        )
        return response


class AddToDatasetForm(forms.Form):
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.all(),
        label="Dataset",
        error_messages={
            "required": "Pick a dataset.",
            "invalid_choice": "Pick a dataset from the list.",
        },
    )
    expected_output = forms.CharField(
        required=False, max_length=100_000, label="Expected output"
    )


def datasets_for(user: Any) -> list[Dataset]:
    """The datasets ``user`` may add a session to (none without the permission)."""
    if not (access.is_user(user) and user.has_perm(ADD_CASE)):
        return []
    return list(Dataset.objects.only("pk", "name")[:200])


class AddToDatasetView(LoginRequiredMixin, View):
    """``POST``: the session's parameters and trust level as a new case."""

    def post(self, request: HttpRequest, pk: Any) -> HttpResponse:
        session = get_object_or_404(
            AgentSession.objects.visible_to(request.user), pk=pk
        )
        if not request.user.has_perm(ADD_CASE):
            raise PermissionDenied("Adding to a dataset needs 'Can add dataset case'.")
        form = AddToDatasetForm(request.POST)
        if not form.is_valid():
            # each field's own message (a NUL in the expected output, its
            # length), not "Pick a dataset." for all of them
            messages.error(request, f"Not added. {errors_in_words(form)}")
            return HttpResponseRedirect(session.get_absolute_url())
        dataset = form.cleaned_data["dataset"]
        try:
            # not every session's parameters went through a run start's limit
            # (a grader's session is started with the output it grades)
            validate_case_params(session.params)
        except ValidationError as error:
            messages.error(
                request,
                f"This session cannot be a case of {dataset.name}: "
                + " ".join(error.messages),
            )
            return HttpResponseRedirect(session.get_absolute_url())
        case = DatasetCase(
            dataset=dataset,
            params=session.params,
            trust_level=session.trust_level,
            expected_output=form.cleaned_data["expected_output"],
            notes=f"From session {session.pk}.",
            source_session=session,
        )
        try:
            append_cases(dataset, [case])
        except ValidationError as error:
            messages.error(request, "Not added. " + " ".join(error.messages))
            return HttpResponseRedirect(session.get_absolute_url())
        messages.info(request, f"Added to the dataset {dataset.name}.")
        return HttpResponseRedirect(session.get_absolute_url())
