"""The section form and its link formsets (a section's tools and hosted
tools), which check the whole edited section against every saved prompt
that uses it. Each validates by building the runtime object."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance

from tooling import assembly
from tooling.assembly import CatalogEdit
from tooling.models import SectionDefinition, lock_section_tree, would_cycle
from tooling.runtime import PromptError
from tooling.runtime.sections import template_placeholders

from .validation import refuse_breaking, runtime_error


class SectionDefinitionForm(forms.ModelForm):
    class Meta:
        model = SectionDefinition
        fields = [
            "key",
            "title",
            "template",
            "default_params",
            "planning_strategy",
            "enabled",
            "enabled_when_param",
            "parent",
            "position",
            "policies",
        ]

    #: what building the section reads: checked when none of them is refused
    built_from = frozenset(
        {
            "key",
            "title",
            "template",
            "default_params",
            "enabled",
            "enabled_when_param",
            "planning_strategy",
        }
    )

    def clean_key(self) -> str:
        """The key as the runtime reads it (lowercase): one in capitals would
        be stored as typed and built lowercased, beside a row that has the
        lowercased key."""
        key: str = self.cleaned_data.get("key") or ""
        if key != key.lower() and (
            self.instance.pk is None or key != self.instance.key
        ):
            raise ValidationError(
                f"Write the key in lowercase: {key.lower()!r} (the runtime reads "
                "it so)."
            )
        taken = (
            SectionDefinition.objects.filter(key__iexact=key)
            .exclude(key=key)
            .exclude(pk=self.instance.pk)
            .values_list("key", flat=True)
            .first()
        )
        if taken is not None:
            raise ValidationError(
                f"Another section, {taken!r}, differs from this key only in "
                "capitals; the runtime reads both as one."
            )
        return key

    def clean_default_params(self) -> dict[str, Any]:
        """Empty (or ``null``) declares no parameters; anything else must be
        an object, as stored."""
        value = self.cleaned_data.get("default_params")
        if value in (None, ""):
            return {}
        if not isinstance(value, dict):
            raise ValidationError(
                'Default params must be a JSON object, e.g. {"name": "default"} '
                "(empty: no parameters)."
            )
        return value

    #: what a refused field is built with while the others are checked
    stand_in: ClassVar[dict[str, Any]] = {
        "key": "section",
        "title": "Section",
        "template": "",
        "default_params": {},
        "enabled": True,
        "enabled_when_param": "",
        "planning_strategy": "",
    }

    #: set by the admin when no link formset will check the whole section
    #: (the user may see neither kind of link): the form checks it, with the
    #: stored links
    checks_whole_section: ClassVar[bool] = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._check_section(cleaned)
        parent = cleaned.get("parent")
        if self.instance.pk is not None and parent is not None:
            # Under the tree's lock, held until the admin's transaction ends: a
            # concurrent edit waits, then sees this one (no cycle either way).
            lock_section_tree()
            if would_cycle(self.instance.pk, parent.pk):
                self.add_error("parent", "A section cannot be its own ancestor.")
        if self.checks_whole_section and not self.errors:
            edited = construct_instance(self, copy.copy(self.instance))
            try:
                check_whole_section(edited, list(cleaned.get("policies") or []), {})
            except ValidationError as error:
                self.add_error(None, error)
        return cleaned

    def _check_section(self, cleaned: dict[str, Any]) -> None:
        """Every field's runtime error at once: the runtime stops at its first
        error, so the blamed field (or one refused already) is built with a
        stand-in and the section built again, until it builds or an error
        names no field still unblamed."""
        given = {
            name: default if name in self.errors else cleaned.get(name, default)
            for name, default in self.stand_in.items()
        }
        if "default_params" in self.errors:
            given["default_params"] = _placeholder_defaults(given["template"])
        for _ in range(len(self.stand_in) + 1):
            candidate = SectionDefinition(
                **{**given, "default_params": given["default_params"] or {}}
            )
            try:
                assembly.build_section(candidate)
                return
            except PromptError as error:
                problem = runtime_error(
                    error, self, "template", template=candidate.template
                )
            blamed = next(iter(getattr(problem, "error_dict", {})), None)
            if blamed in self.errors:
                return  # its stand-in did not help: one message is enough
            self.add_error(None, problem)
            if blamed not in self.stand_in:
                return
            given[blamed] = (
                _placeholder_defaults(given["template"])
                if blamed == "default_params"
                else self.stand_in[blamed]
            )


def _placeholder_defaults(template: str | None) -> dict[str, str]:
    """Refused defaults' stand-in: the template's own placeholders, so that
    the template is not blamed for declaring them (``{"document": "x",
    "class": 1}`` refused for ``class`` also said ``$document`` was unknown)."""
    try:
        names = template_placeholders(template or "")
    except PromptError:
        names = ()
    return dict.fromkeys(names, "")


class SectionLinkFormSet(forms.BaseInlineFormSet):
    """The section's tool (or hosted tool) links. The last link formset checks
    the whole edited section (its fields, policies and both kinds of links)
    against every saved prompt that uses it, before anything is saved."""

    link_field = "tool"
    checks_section = False

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        linked = []
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if not data or data.get("DELETE") or not data.get(self.link_field):
                continue
            linked.append((data.get("position") or 0, data[self.link_field]))
        rows = [row for _, row in sorted(linked, key=lambda pair: pair[0])]
        pending = getattr(self.instance, "_pending_links", {})
        pending[self.link_field] = rows
        self.instance._pending_links = pending
        if self.checks_section:
            self._check_section(pending)

    def _check_section(self, pending: dict[str, list[Any]]) -> None:
        section = self.instance
        policies = getattr(section, "_pending_policies", None)
        if policies is None:
            # The section's own form has errors (the admin's ``save_form``,
            # which sets its policies, ran only for a valid one): they are
            # shown, and the check of the whole section waits for a valid
            # form (it would read an unsaved section's policies).
            return
        check_whole_section(section, policies, pending)


def check_whole_section(
    section: SectionDefinition, policies: list[Any], pending: dict[str, list[Any]]
) -> None:
    """Refuse (``ValidationError``) an edited section that would break a saved
    prompt: its fields, ``policies`` and the links ``pending`` holds (by link
    field; the stored ones for a kind it does not hold)."""
    edit = CatalogEdit()
    if section.pk is None:
        edit.added_section = section
    else:
        edit.replaced[(SectionDefinition, section.pk)] = section
    if "tool" in pending:
        edit.section_tools[section.pk] = pending["tool"]
    if "hosted_tool" in pending:
        edit.section_hosted[section.pk] = pending["hosted_tool"]
    edit.section_policies[section.pk] = policies
    refuse_breaking(edit)


class SectionToolFormSet(SectionLinkFormSet):
    link_field = "tool"


class SectionHostedToolFormSet(SectionLinkFormSet):
    link_field = "hosted_tool"
    # (the admin makes the last formset the user may see check the section:
    # ``SectionDefinitionAdmin.get_formsets_with_inlines``)
    checks_section = True
