"""The policy form: each kind's config as typed fields, or as JSON.

The fields of the chosen kind write its config (``policy_configs``: the same
JSON for the same meaning); "Edit the configuration: as JSON" takes the JSON
instead, for what the fields cannot show. Either way the runtime judges
(``assembly.build_policy``), its errors on the field they concern, every
field's at once. A saved config the fields cannot show opens as JSON and is
never rewritten from the fields; a save that means what is saved keeps the
saved JSON as it is.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from tooling import assembly
from tooling.assembly import CatalogEdit
from tooling.models import PolicyDefinition
from tooling.runtime import PromptError

from . import approvers
from .editors import bidi_problem, validate_no_bidi_text, validate_text
from .fields import DatalistInput, PlainIntegerField, ThreeWayField, ThreeWaySelect
from .policy_conditions import rules_look_alike_problem
from .policy_configs import (
    EDITOR_FIELDS,
    KIND_FIELDS,
    canonical,
    config_from_fields,
    fields_initial,
    referenced_names,
    same,
    unexpressible,
)
from .policy_fields import (
    DependencyRowsField,
    LimitRowsField,
    PolicyRowsField,
    RuleRowsField,
    ToolNamesField,
    tool_choices,
)
from .validation import refuse_breaking

Kind = PolicyDefinition.Kind
FIELDS, JSON = "fields", "json"

#: Stand-ins while the rest of an approval config is checked: a refused part
#: must not hide the other parts' errors.
_STAND_IN_RULES = [{"tool": "stand_in"}]
_FOUR_EYES = [
    ("unknown", "The site's default (WINK_APPROVAL_FOUR_EYES)"),
    ("true", "Yes: whoever started the run may not decide"),
    ("false", "No"),
]


_JSON_HELP = (
    'Sequential dependency: {"dependencies": {"deploy": ["build", "test"]}}. Read '
    'before write: {"read_tools": ["read_file"], "write_tools": ["write_file", '
    '"edit_file"], "mount_point": ""}. Call limit: {"limits": {"deploy": 1}} (most '
    'calls per run). Approval: {"rules": [{"tool": "deploy", "when": {"environment": '
    '"production"}}], "approvers": {"permission": "app_label.codename", "group": '
    '"Release managers"}, "deadline_seconds": 3600, "four_eyes": true} (approvers, '
    "deadline and four_eyes optional; docs/approvals.md)."
)


def _text(label: str, help_text: str, *, strip: bool = True, **kwargs: Any) -> Any:
    return forms.CharField(
        label=label,
        help_text=help_text,
        required=False,
        strip=strip,
        validators=[validate_text],
        **kwargs,
    )


class PolicyDefinitionForm(forms.ModelForm):
    config_source = forms.ChoiceField(
        label="Edit the configuration",
        choices=[(FIELDS, "With the fields below"), (JSON, "As JSON")],
        initial=FIELDS,
        required=False,
        widget=forms.RadioSelect,
        help_text="The fields write the JSON the runtime reads; JSON takes any "
        "configuration the runtime accepts.",
    )
    dependencies = DependencyRowsField(
        label="Dependencies",
        help_text="A row per tool that must wait: the tool, and the tools that "
        "must have succeeded first (Ctrl or Cmd picks several).",
    )
    read_tools = ToolNamesField(label="Read tools", help_text="None picked: read_file.")
    write_tools = ToolNamesField(
        label="Write tools", help_text="None picked: write_file and edit_file."
    )
    mount_point = _text(
        "Mount point",
        "The folder the tools' paths are relative to, if any (e.g. workspace).",
        strip=False,
        max_length=1000,
    )
    limits = LimitRowsField(label="Call limits", help_text="A row per limited tool.")
    rules = RuleRowsField(
        label="Rules",
        help_text="A row per tool that needs approval. Only when: a condition a "
        "line, argument = value (environment = production; target.region = us "
        "reaches into an object); one argument on several lines matches any of "
        "its values; every argument must match; none: every call asks. A value "
        'is text, or a number, true, false or null ("3" for the text 3).',
    )
    approvers_permission = _text(
        "Approvers' permission",
        "Holders of this permission (app_label.codename) may decide too, besides "
        "superusers and the Approvers group.",
        max_length=150,
    )
    approvers_group = _text(
        "Approvers' group",
        "Members of this group may decide too (it may be created later).",
        max_length=150,
    )
    deadline_seconds = PlainIntegerField(
        label="Deadline (seconds)",
        required=False,
        widget=forms.NumberInput(attrs={"min": 1}),
        help_text="How long a request waits before it is denied (1 s to a year); "
        "empty: WINK_APPROVAL_TIMEOUT_SECONDS.",
    )
    four_eyes = ThreeWayField(
        label="Four eyes",
        required=False,
        widget=ThreeWaySelect,
        help_text="Whether the person who started the run is kept from deciding.",
    )

    class Meta:
        model = PolicyDefinition
        fields = ["name", "kind", "config", "description"]
        help_texts = {
            "kind": "Fill in the fields of this kind; the other kinds' are ignored.",
            "config": _JSON_HELP,
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        four_eyes = self.fields["four_eyes"].widget
        assert isinstance(four_eyes, ThreeWaySelect)
        four_eyes.choices = _FOUR_EYES
        stored = self.instance.config if self.instance.pk is not None else None
        choices = tool_choices(referenced_names(stored))
        for name in EDITOR_FIELDS:
            field = self.fields[name]
            if isinstance(field, PolicyRowsField):
                field.set_tools(choices)
            elif isinstance(field, ToolNamesField):
                field.choices = choices
        self.fields["approvers_permission"].widget = DatalistInput(
            approvers.permission_names(), attrs={"class": "vTextField"}
        )
        self.fields["approvers_group"].widget = DatalistInput(
            Group.objects.order_by("name").values_list("name", flat=True),
            attrs={"class": "vTextField"},
        )
        if self.instance.pk is not None and self.instance.kind in KIND_FIELDS:
            self._show_stored(self.instance.kind, self.instance.config)

    def _show_stored(self, kind: str, config: Any) -> None:
        shown = canonical(kind, config)
        if shown is None:
            self.initial["config_source"] = JSON
            self.fields["config_source"].help_text = format_html(
                "The saved configuration cannot be shown as fields ({}): it is "
                "edited as JSON.",
                unexpressible(kind, config),
            )
            return
        self.initial.update(fields_initial(kind, shown))

    # -- reading the form ---------------------------------------------------

    def source(self) -> str:
        """Where the config comes from: the posted choice; without one (a
        script, the form before the fields), the JSON if it was posted."""
        posted = self.data.get(self.add_prefix("config_source"))
        if posted in (FIELDS, JSON):
            return str(posted)
        return JSON if self.add_prefix("config") in self.data else FIELDS

    def _edited(self, name: str) -> bool:
        field = self.fields[name]
        data = field.widget.value_from_datadict(
            self.data, self.files, self.add_prefix(name)
        )
        return field.has_changed(self.get_initial_for_field(field, name), data)

    def _refuse_ignored_edits(self, kind: str, source: str) -> None:
        """An edit the chosen source would ignore is refused, not lost (a
        page without JavaScript shows both)."""
        if self.add_prefix("config_source") not in self.data:
            return
        if source == FIELDS:
            if self.add_prefix("config") in self.data and self._edited("config"):
                self.add_error(
                    "config_source",
                    "The JSON was edited, but the configuration is saved from the "
                    "fields: choose \u201cAs JSON\u201d to save the JSON, or undo "
                    "its edit.",
                )
            return
        edited = [
            str(self.fields[name].label)
            for name in KIND_FIELDS.get(kind, ())
            if self._edited(name)
        ]
        if edited:
            self.add_error(
                "config_source",
                f"{', '.join(edited)} changed, but the configuration is saved from "
                "the JSON: choose \u201cWith the fields below\u201d to save the "
                "fields, or undo their edit.",
            )

    def clean_name(self) -> str:
        """Shown in denials and the audit trail: it reads as it is."""
        name: str = self.cleaned_data["name"]
        validate_no_bidi_text(name)
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind = cleaned.get("kind")
        source = self.source()
        # Only the chosen kind's fields count, or only the JSON.
        for name in EDITOR_FIELDS:
            if source == JSON or name not in KIND_FIELDS.get(kind or "", ()):
                self.errors.pop(name, None)
        if source == FIELDS:
            self.errors.pop("config", None)
        if kind not in KIND_FIELDS or "config_source" in self.errors:
            return cleaned
        self._refuse_ignored_edits(kind, source)
        name = cleaned.get("name", "") if "name" not in self.errors else "policy"
        if source == FIELDS:
            config = self._config_from_fields(kind, name, cleaned)
        else:
            config = self._config_from_json(kind, name, cleaned)
        if config is None or self.errors:
            return cleaned
        stored = self.instance.config
        if self.instance.pk is not None and self.instance.kind == kind:
            before = canonical(kind, stored)
            if same(stored, config) or (
                before is not None and same(before, canonical(kind, config))
            ):
                config = stored  # the same meaning: the saved JSON as it is
        cleaned["config"] = config
        if self.instance.pk is not None:
            # An edit must not break the prompts that already use the policy.
            candidate = PolicyDefinition(pk=self.instance.pk, name=name, kind=kind)
            candidate.config = config
            try:
                refuse_breaking(CatalogEdit.saving(candidate))
            except ValidationError as error:
                self.add_error("config" if source == JSON else None, error.messages)
        return cleaned

    def _config_from_json(
        self, kind: str, name: str, cleaned: dict[str, Any]
    ) -> dict[str, Any] | None:
        if "config" in self.errors:
            return None
        config = cleaned.get("config")
        config = {} if config in (None, "") else config
        problem = bidi_problem(config)
        if problem:
            self.add_error("config", problem)
            return None
        try:
            policy = assembly.build_policy(
                PolicyDefinition(name=name, kind=kind, config=config)
            )
        except PromptError as error:
            self.add_error("config", error.message)
            return None
        problem = approvers.permission_problem(policy) or rules_look_alike_problem(
            policy
        )
        if problem:
            self.add_error("config", problem)
            return None
        shown = canonical(kind, config)
        return config if shown is None else shown

    def _config_from_fields(
        self, kind: str, name: str, cleaned: dict[str, Any]
    ) -> dict[str, Any] | None:
        if self.instance.pk is not None and self.instance.kind == kind:
            reason = unexpressible(kind, self.instance.config)
            if reason is not None:
                self.add_error(
                    "config_source",
                    f"The saved configuration cannot be shown as fields ({reason}): "
                    "saving the fields would lose it. Edit it as JSON.",
                )
                return None
        parts = {
            field: cleaned.get(field)
            for field in KIND_FIELDS[kind]
            if field not in self.errors
        }
        if kind == Kind.APPROVAL and "rules" not in parts:
            parts["rules"] = _STAND_IN_RULES
        config = config_from_fields(kind, parts)
        # The runtime stops at its first error: the part it blames is left out
        # (or stood in for) and the config built again, every part's error once.
        for _ in range(len(KIND_FIELDS[kind]) + 1):
            try:
                policy = assembly.build_policy(
                    PolicyDefinition(name=name, kind=kind, config=config)
                )
            except PromptError as error:
                field = _field_of(kind, error)
                if field in self.errors or field not in parts:
                    if not self.errors:
                        self.add_error(None, error.message)
                    return None
                self.add_error(field, error.message)
                if field == "rules":
                    parts["rules"] = _STAND_IN_RULES
                else:
                    parts.pop(field)
                config = config_from_fields(kind, parts)
                continue
            problem = approvers.permission_problem(policy)
            if problem:
                self.add_error("approvers_permission", problem)
            break
        if self.errors:
            return None
        return config

    @property
    def changed_data(self) -> list[str]:
        """The model's fields that changed (for the admin's log): the config
        once, whichever fields wrote it."""
        names = [
            name
            for name in super().changed_data
            if name not in EDITOR_FIELDS and name not in ("config", "config_source")
        ]
        cleaned = getattr(self, "cleaned_data", None) or {}
        if "config" in cleaned and not same(
            cleaned["config"], self.initial.get("config")
        ):
            names.append("config")
        return names


def _field_of(kind: str, error: PromptError) -> str:
    """The field of ``kind`` a runtime error concerns."""
    placeholder = error.placeholder or ""
    if kind == Kind.APPROVAL:
        if placeholder == "approvers":
            group = "approvers.group" in error.message
            return "approvers_group" if group else "approvers_permission"
        if placeholder in ("deadline_seconds", "four_eyes"):
            return placeholder
        return "rules"
    if kind == Kind.READ_BEFORE_WRITE:
        known = ("read_tools", "write_tools", "mount_point")
        return placeholder if placeholder in known else "write_tools"
    return KIND_FIELDS[kind][0]
