"""A hosted kind lives in one place per layer: a kind registered with only a
runtime spec (config + options + factory) and a codec gets a working admin
form, stored-config assembly, kind validation and preview, with no other
module touched (docs/hosted-kinds.md)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import escape

from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling import assembly
from tooling.forms import ModelCapabilityForm
from tooling.forms.hosted import hosted_tool_form
from tooling.models import HostedToolDefinition, SectionHostedTool
from tooling.runtime import HostedTool, PromptValidationError
from tooling.runtime.adapters.openai.codecs import register_codec, unregister_codec
from tooling.runtime.hosted.spec import (
    HostedKindSpec,
    HostedOption,
    hosted_kinds,
    register_kind,
    unregister_kind,
)

pytestmark = pytest.mark.django_db

MODES = ("fast", "deep")


# -- The toy kind: what a new kind's runtime module and codec would hold.


@dataclasses.dataclass(frozen=True)
class ToySearchConfig:
    index: str
    limit: int | None = None
    mode: str | None = None
    file_ids: tuple[str, ...] = ()
    boost: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.index, str) or not self.index.strip():
            raise PromptValidationError(
                "Give the index to search.", placeholder="index"
            )
        if self.limit is not None and not 1 <= self.limit <= 20:
            raise PromptValidationError(
                f"limit must be 1 to 20 (got {self.limit}).", placeholder="limit"
            )
        if self.mode is not None and self.mode not in MODES:
            raise PromptValidationError(
                f"mode must be one of {', '.join(MODES)}.", placeholder="mode"
            )
        object.__setattr__(self, "file_ids", tuple(self.file_ids))


def toy_search_tool(
    config: ToySearchConfig,
    *,
    name: str = "toy_search",
    description: str = "Search the toy index.",
) -> HostedTool[ToySearchConfig]:
    return HostedTool(
        kind="toy_search", name=name, description=description, config=config
    )


TOY_SPEC: HostedKindSpec[ToySearchConfig] = HostedKindSpec(
    kind="toy_search",
    label="Toy search",
    config_type=ToySearchConfig,
    tool_factory=toy_search_tool,
    description="Used when the kind is toy_search.",
    options=(
        HostedOption("index", max_length=40, default="", help="The index to search."),
        HostedOption("limit", "integer", help="1 to 20."),
        HostedOption("mode", "choice", choices=MODES),
        # Another kind's form already has file_ids: shown as toy_search_file_ids.
        HostedOption("file_ids", "lines"),
        HostedOption("boost", "boolean", default=False),
    ),
)


class ToySearchCodec:
    kind = "toy_search"
    item_types: tuple[str, ...] = ()
    include: tuple[str, ...] = ()

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        config = tool.config
        wire: dict[str, Any] = {"type": "toy_search", "index": config.index}
        if config.limit is not None:
            wire["limit"] = config.limit
        if config.file_ids:
            wire["file_ids"] = list(config.file_ids)
        return wire

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "toy_search"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return True

    def parse_call(self, item: Any) -> None:
        return None

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> None:
        return None


@pytest.fixture
def toy_kind(settings) -> Iterator[HostedKindSpec[ToySearchConfig]]:
    settings.WINK_PROVIDER = "offline"
    register_kind(TOY_SPEC)
    register_codec(ToySearchCodec())
    try:
        yield TOY_SPEC
    finally:
        unregister_codec("toy_search")
        unregister_kind("toy_search")


def _add(admin_client, fields: dict[str, Any]):
    return admin_client.post(
        reverse("admin:tooling_hostedtooldefinition_add"),
        {
            "name": "toy",
            "kind": "toy_search",
            "description": "Search the toy index.",
            "enabled": "on",
            **fields,
        },
    )


def test_the_admin_shows_a_fieldset_of_the_new_kind(admin_client, toy_kind):
    page = admin_client.get(reverse("admin:tooling_hostedtooldefinition_add"))

    html = page.content.decode()
    assert page.status_code == 200
    assert "kind-toy_search" in html
    assert '<option value="toy_search">Toy search</option>' in html
    for field in ("index", "limit", "mode", "toy_search_file_ids", "boost"):
        assert f'id="id_{field}"' in html
    assert "Used when the kind is toy_search." in html


def test_typed_input_is_stored_as_the_specs_json_and_shown_again(
    admin_client, toy_kind
):
    response = _add(
        admin_client,
        {
            "index": "  docs ",
            "limit": "5",
            "mode": "deep",
            "toy_search_file_ids": "file-1\nfile-2",
            "boost": "on",
            # Another kind's field: ignored.
            "server_url": "not a url",
        },
    )

    assert response.status_code == 302
    definition = HostedToolDefinition.objects.get()
    assert definition.kind == "toy_search"
    assert definition.config == {
        "index": "docs",
        "limit": 5,
        "mode": "deep",
        "file_ids": ["file-1", "file-2"],
        "boost": True,
    }
    tool = assembly.build_hosted_tool(definition)
    assert tool.config == ToySearchConfig(
        index="docs", limit=5, mode="deep", file_ids=("file-1", "file-2"), boost=True
    )

    change = admin_client.get(
        reverse("admin:tooling_hostedtooldefinition_change", args=[definition.pk])
    )
    form = change.context["adminform"].form
    assert form.initial["index"] == "docs"
    assert form.initial["toy_search_file_ids"] == "file-1\nfile-2"
    assert form.initial["boost"] is True


def test_the_configs_own_rule_is_shown_on_its_field(admin_client, toy_kind):
    response = _add(admin_client, {"index": "docs", "limit": "50"})

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["limit"] == ["limit must be 1 to 20 (got 50)."]
    assert not HostedToolDefinition.objects.exists()

    missing = _add(admin_client, {"index": "  "})
    assert missing.context["adminform"].form.errors["index"] == [
        "Give the index to search."
    ]


def test_hostile_typed_input_gets_a_field_error_and_saves_nothing(
    admin_client, toy_kind
):
    response = _add(
        admin_client,
        {
            "index": "do\x00cs",
            "limit": "many",
            "toy_search_file_ids": "a\x00b",
            "mode": "<script>",
        },
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["index"] == ["Null characters are not allowed."]
    assert errors["toy_search_file_ids"] == ["Null characters are not allowed."]
    assert errors["limit"] == ["Enter a whole number: digits 0-9."]
    assert "<script>" not in response.content.decode()
    too_long = _add(admin_client, {"index": "x" * 100_000})
    assert too_long.context["adminform"].form.errors["index"] == [
        "Ensure this value has at most 40 characters (it has 100000)."
    ]
    assert not HostedToolDefinition.objects.exists()


def test_a_stored_config_with_unknown_keys_is_refused(toy_kind):
    definition = HostedToolDefinitionFactory.build(
        kind="toy_search", config={"index": "docs", "size": 3, "colour": "red"}
    )

    with pytest.raises(PromptValidationError) as refused:
        assembly.build_hosted_tool(definition)

    assert refused.value.message == (
        "Unknown toy_search option(s): colour, size; expected: index, limit, mode, "
        "file_ids, boost."
    )
    assert refused.value.placeholder == "config"


def test_the_preview_shows_the_codecs_wire_json(admin_client, toy_kind):
    definition = HostedToolDefinitionFactory.create(
        name="toy", kind="toy_search", config={"index": "docs", "limit": 3}
    )
    section = SectionDefinitionFactory.create(template="Search the toy index.")
    SectionHostedTool.objects.create(section=section, hosted_tool=definition)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)

    response = admin_client.post(
        reverse("admin:tooling_prompttemplate_preview", args=[prompt.pk]),
        {"params": "{}"},
    )

    assert response.status_code == 200
    assert not response.context["errors"]
    tools = json.loads(response.context["request_json"])["tools"]
    assert {"type": "toy_search", "index": "docs", "limit": 3} in tools
    assert escape(response.context["request_json"]) in response.content.decode()


def test_the_kind_is_valid_only_while_registered(toy_kind):
    definition = HostedToolDefinition(
        name="toy", kind="toy_search", description="Toy.", config={"index": "d"}
    )
    definition.full_clean()
    capability = ModelCapabilityForm(
        data={"model": "gpt-5.4", "hosted_kinds": '["toy_search"]'}
    )
    assert capability.is_valid(), capability.errors
    assert "toy_search" in capability.fields["hosted_kinds"].help_text

    unregister_kind("toy_search")
    try:
        with pytest.raises(ValidationError) as refused:
            definition.full_clean()
        assert "kind" in refused.value.message_dict
        with pytest.raises(PromptValidationError, match="not supported"):
            assembly.build_hosted_tool(definition)
        assert "toy_search" not in hosted_tool_form().kind_fields
    finally:
        register_kind(TOY_SPEC)


# -- The shipped kinds, derived from their specs.

#: The admin's field names per kind before the specs: stored forms, browser
#: tests and scripts posting the form rely on them.
LEGACY_FIELDS = {
    "web_search": (
        "allowed_domains",
        "country",
        "city",
        "region",
        "timezone",
        "search_context_size",
        "allow_live_access",
    ),
    "file_search": (
        "vector_store_ids",
        "max_results",
        "filters",
        "ranker",
        "score_threshold",
        "embedding_weight",
        "text_weight",
    ),
    "code_interpreter": ("container_id", "memory_limit", "file_ids"),
    "image_generation": (
        "size",
        "quality",
        "output_format",
        "background",
        "image_model",
        "output_compression",
        "moderation",
        "action",
        "partial_images",
    ),
    "mcp": (
        "server_label",
        "server_url",
        "connector_id",  # issue #24: OpenAI's connectors
        "allowed_tools",
        "require_approval",
        "server_description",
        "header_env",
        "authorization_env",  # issue #24: a connector's token variable
    ),
    "shell": (
        "environment",
        "network_policy",
        "shell_allowed_domains",
        "shell_memory_limit",
        "shell_file_ids",
        "shell_container_id",
        "executor",
    ),
    "apply_patch": (),
}


def test_the_shipped_kinds_keep_their_form_field_names():
    assert hosted_tool_form().kind_fields == LEGACY_FIELDS
    assert [value for value, _ in HostedToolDefinition.Kind.choices] == list(
        LEGACY_FIELDS
    )


def test_every_option_of_a_default_built_kind_is_a_config_field():
    for spec in hosted_kinds():
        if spec.build is not None:
            continue
        fields = {field.name for field in dataclasses.fields(spec.config_type)}
        for option in spec.options:
            assert option.config_field in fields, (spec.kind, option.name)


def test_the_admin_fieldsets_follow_the_registry(admin_client):
    page = admin_client.get(reverse("admin:tooling_hostedtooldefinition_add"))

    titles = [fieldset.name for fieldset in page.context["adminform"]]
    assert titles == [
        None,
        *(spec.label for spec in hosted_kinds()),
        "Stored configuration",
        "Change record",  # the reason and the stale-form version (tooling/history)
    ]
