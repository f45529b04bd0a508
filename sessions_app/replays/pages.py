"""The replay button's POST and the comparison page.

Who may use them: replaying needs to see the source session (another user's
is a 404) and to start sessions at its trust level (``access``); the replay
belongs to whoever started it. Comparing needs to see both sessions.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from sessions_app import access
from sessions_app.audit.bidi import NeutraliseBidiMixin
from sessions_app.costs.budgets import DailyBudgetExceeded
from sessions_app.models import AgentSession
from tooling.api.throttling import StartSlot, start_limit_message
from tooling.forms.validation import errors_in_words
from tooling.models import PromptLabel

from .comparison import compare_sessions
from .starting import SAME, start_replay

LABEL_PREFIX = "label:"
REPLAYS_SHOWN = 10


class ReplayForm(forms.Form):
    against = forms.CharField(
        max_length=80,
        label="Replay against",
        initial=SAME,
        help_text="same (the source's revision), draft, label:<name> or a "
        "revision's hash.",
    )
    live_tools = forms.BooleanField(
        required=False,
        help_text="Run read-only tools live (they change nothing outside the run); "
        "otherwise every call is answered from the source's record.",
    )

    def clean_against(self) -> str:
        against = self.cleaned_data["against"].strip()
        if against.startswith(LABEL_PREFIX) and not against.removeprefix(LABEL_PREFIX):
            # (an empty label read as none: the same revision, replayed)
            raise forms.ValidationError("Name the label: label:<name>.")
        return against

    def target(self) -> dict[str, Any]:
        against = self.cleaned_data["against"]
        if against.startswith(LABEL_PREFIX):
            return {"label": against.removeprefix(LABEL_PREFIX)}
        return {"revision": against}


def may_replay(user: Any, session: AgentSession) -> bool:
    return access.may_start(user) and access.may_start_at(user, session.trust_level)


def detail_context(session: AgentSession, user: Any) -> dict[str, Any]:
    """The session page's replay parts: the replay form's targets (when
    ``user`` may replay it) and the replays of it ``user`` may see."""
    context: dict[str, Any] = {
        "replays": list(
            AgentSession.objects.visible_to(user)
            .filter(replay_of=session)
            .order_by("-created_at")
            .only("pk", "created_at", "status", "revision_id", "label")[:REPLAYS_SHOWN]
        )
    }
    if session.is_finished and may_replay(user, session):
        labels = PromptLabel.objects.filter(
            prompt__namespace=session.prompt_ref.partition("/")[0],
            prompt__key=session.prompt_ref.partition("/")[2],
        ).values_list("name", "revision_id")
        context["replay_targets"] = [
            (SAME, "the same revision"),
            ("draft", "the draft (the catalog as it is now)"),
            *(
                (f"{LABEL_PREFIX}{name}", f"the label {name} ({digest[:12]})")
                for name, digest in labels
            ),
        ]
    return context


class ReplayView(LoginRequiredMixin, View):
    """``POST``: replay the session; the new session's page on success."""

    def post(self, request: HttpRequest, pk: Any) -> HttpResponse:
        source = get_object_or_404(AgentSession.objects.visible_to(request.user), pk=pk)
        if not may_replay(request.user, source):
            raise PermissionDenied(
                "Replaying needs the permission to start sessions at its trust level."
            )
        form = ReplayForm(request.POST)
        if not form.is_valid():
            messages.error(request, f"Not replayed. {errors_in_words(form)}")
            return HttpResponseRedirect(source.get_absolute_url())
        slot = StartSlot.take(request.user)  # as the API counts its starts
        if slot.wait is not None:
            messages.error(request, "Not replayed: " + start_limit_message(slot.wait))
            return HttpResponseRedirect(source.get_absolute_url())
        try:
            replay = start_replay(
                source,
                user=request.user,
                live_tools=form.cleaned_data["live_tools"],
                **form.target(),
            )
        except ValidationError as error:
            slot.give_back()
            messages.error(request, "Not replayed: " + " ".join(error.messages))
            return HttpResponseRedirect(source.get_absolute_url())
        except DailyBudgetExceeded as error:
            slot.give_back()
            messages.error(request, f"Not replayed: {error.message}")
            return HttpResponseRedirect(source.get_absolute_url())
        messages.info(request, "Replay started.")
        return HttpResponseRedirect(replay.get_absolute_url())


class SessionCompareView(LoginRequiredMixin, NeutraliseBidiMixin, TemplateView):
    template_name = "sessions_app/session_compare.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        visible = AgentSession.objects.visible_to(self.request.user)
        left = get_object_or_404(visible, pk=kwargs["pk"])
        right = get_object_or_404(visible, pk=kwargs["other"])
        comparison = compare_sessions(left, right)
        revisions_differ = (
            left.revision_id
            and right.revision_id
            and left.revision_id != right.revision_id
        )
        context.update(
            comparison=comparison,
            left=left,
            right=right,
            revision_diff_url=reverse(
                "sessions_app:revision-compare",
                args=[left.revision_id, right.revision_id],
            )
            if revisions_differ and access.may_view_revisions(self.request.user)
            else None,
        )
        return context
