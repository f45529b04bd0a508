"""The function tool form: the handler, its parameters' descriptions (a box
per parameter) and its examples (a row each), validated by building the
runtime tool; every field's error at once."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from tooling import assembly
from tooling.assembly import CatalogEdit
from tooling.handlers import registry
from tooling.models import ToolDefinition
from tooling.runtime import PromptError

from .editors import quoted
from .example_editors import (
    ExamplesField,
    canonical_examples,
    numbered,
    readable_examples,
    same_examples,
)
from .handler_params import handler_parameters
from .tool_editors import (
    ParamDescriptionsField,
    ParamDescriptionsWidget,
    same_overrides,
)
from .validation import field_of, refuse_breaking

#: Stand-ins while the rest of a tool is checked: a name already refused must
#: not hide the other fields' errors.
_STAND_IN_NAME = "tool"


class ToolDefinitionForm(forms.ModelForm):
    handler_key = forms.ChoiceField(label="Handler", choices=())
    param_descriptions = ParamDescriptionsField(
        label="Parameter descriptions",
        required=False,
        help_text="What the model reads about each parameter of the handler: "
        "a box each, its placeholder the handler's own description (kept when "
        "the box is empty). Only for handlers that accept overrides.",
    )
    examples = ExamplesField(
        label="Examples",
        required=False,
        help_text="Calls the model is shown: a description (1-200 ASCII "
        "characters), the input (the handler's parameters, a JSON object) and "
        "the output it returns (JSON), checked against the handler's types. "
        "Tick Remove to drop a row.",
    )

    class Meta:
        model = ToolDefinition
        fields = [
            "name",
            "handler_key",
            "description",
            "param_descriptions",
            "examples",
            "enabled",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        handler_key = cast(forms.ChoiceField, self.fields["handler_key"])
        handler_key.choices = [("", "---------"), *registry.choices()]
        boxes = self.fields["param_descriptions"].widget
        assert isinstance(boxes, ParamDescriptionsWidget)
        boxes.handler_name = self.add_prefix("handler_key")
        if self.is_bound:
            chosen = self.data.get(self.add_prefix("handler_key"))
            boxes.selected = chosen if isinstance(chosen, str) else ""
        else:
            boxes.selected = self.instance.handler_key or ""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "handler_key" in self.errors:
            return cleaned
        key = cleaned.get("handler_key", "")
        overrides = cleaned.get("param_descriptions") or {}
        if "param_descriptions" not in self.errors:
            for problem in _override_problems(key, overrides):
                self.add_error("param_descriptions", problem)
        examples = cleaned.get("examples") or []
        if "examples" in self.errors:
            # the rows that read, while others' JSON does not
            checked = readable_examples(self["examples"].data)
        elif isinstance(examples, list):
            checked = list(numbered(examples))
        else:
            checked = []
        for problem in assembly.example_problems(key, checked):
            self.add_error("examples", problem)
        candidate = ToolDefinition(
            name=cleaned.get("name", "")
            if "name" not in self.errors
            else _STAND_IN_NAME,
            handler_key=key,
            description=cleaned.get("description", "")
            if "description" not in self.errors
            else "",
            # examples checked one by one above (a list), else by the runtime
            examples=[] if isinstance(examples, list) else examples,
        )
        # The runtime stops at its first error: each blamed field is stood in
        # for and the tool built again, so one submit shows every error.
        stand_in = {"name": _STAND_IN_NAME, "description": ""}
        for _ in range(len(stand_in) + 1):
            try:
                assembly.build_tool(candidate)
                break
            except PromptError as error:
                field, message = field_of(error), error.message
            if field not in self.fields:
                self.add_error(None, message)
                break
            if field in self.errors:
                break
            self.add_error(field, message)
            if field not in stand_in:
                break
            setattr(candidate, field, stand_in[field])
        if self.errors:
            return cleaned
        self._keep_what_means_the_same(cleaned)
        if self.instance.pk is not None:
            # An edit (disabling included) must not break the prompts using it.
            candidate.pk = self.instance.pk
            candidate.examples = cleaned["examples"]
            candidate.param_descriptions = cleaned["param_descriptions"]
            candidate.enabled = cleaned.get("enabled", True)
            refuse_breaking(CatalogEdit.saving(candidate))
        return cleaned

    def _keep_what_means_the_same(self, cleaned: dict[str, Any]) -> None:
        """The saved JSON stays as it is when the editors say the same; what
        they wrote is stored in their order (the same JSON for one meaning)."""
        stored = self.instance if self.instance.pk is not None else None
        examples = cleaned.get("examples") or []
        if stored is not None and same_examples(stored.examples, examples):
            cleaned["examples"] = stored.examples
        else:
            shown = canonical_examples(examples)
            cleaned["examples"] = list(examples) if shown is None else shown
        overrides = cleaned.get("param_descriptions") or {}
        if stored is not None and same_overrides(stored.param_descriptions, overrides):
            cleaned["param_descriptions"] = stored.param_descriptions
        else:
            tool = registry.get(cleaned["handler_key"])
            order = [parameter.name for parameter in handler_parameters(tool)]
            cleaned["param_descriptions"] = {
                name: overrides[name]
                for name in [*order, *overrides]
                if name in overrides
            }


def _shown_name(name: str) -> str:
    return name if name.isidentifier() and name.isascii() else quoted(name)


def _override_problems(key: str, overrides: Any) -> list[str]:
    """What is wrong with the parameter descriptions given for handler
    ``key``, every problem at once."""
    if not isinstance(overrides, dict) or not all(
        isinstance(v, str) for v in overrides.values()
    ):
        return ['Use {"parameter": "description"}.']
    tool = registry.get(key)
    if overrides and not tool.accepts_overrides:
        return [
            f"Handler '{key}' does not accept overrides; leave the parameter "
            "descriptions empty."
        ]
    problems = []
    known = {param.name for param in handler_parameters(tool)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        shown = ", ".join(_shown_name(name) for name in unknown[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        problems.append(
            f"Unknown parameter(s): {shown}{more}; "
            f"the handler takes: {', '.join(sorted(known)) or 'none'}."
        )
    problems.extend(
        f"Description of '{field_name}' must be 1-200 ASCII characters."
        for field_name, text in overrides.items()
        if field_name in known
        and (not text.strip() or not text.isascii() or len(text) > 200)
    )
    return problems
