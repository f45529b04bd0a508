"""``HostedKindSpec``: a kind's options as data, how a stored JSON config
becomes the config, and the registry (no Django)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tooling.runtime import (
    CodeInterpreterConfig,
    DomainFilter,
    FileSearchConfig,
    GeoHint,
    HostedTool,
    McpConfig,
    PromptValidationError,
    RankingOptions,
    ShellConfig,
    WebSearchConfig,
)
from tooling.runtime.hosted.spec import (
    HostedKindSpec,
    HostedOption,
    hosted_kind,
    hosted_kind_names,
    register_kind,
    unregister_kind,
)


@dataclasses.dataclass(frozen=True)
class NoteConfig:
    text: str = "-"
    count: int | None = None


def note_tool(
    config: NoteConfig | None = None,
    *,
    name: str = "note",
    description: str = "Take a note.",
) -> HostedTool[NoteConfig]:
    return HostedTool(
        kind="note", name=name, description=description, config=config or NoteConfig()
    )


def _spec(**kwargs: Any) -> HostedKindSpec[NoteConfig]:
    fields: dict[str, Any] = {
        "kind": "note",
        "label": "Note",
        "config_type": NoteConfig,
        "tool_factory": note_tool,
        "options": (HostedOption("text"), HostedOption("count", "integer")),
    }
    return HostedKindSpec(**{**fields, **kwargs})


def test_the_shipped_kinds_are_registered_in_the_admins_order() -> None:
    assert hosted_kind_names() == (
        "web_search",
        "file_search",
        "code_interpreter",
        "image_generation",
        "mcp",
        "shell",
        "apply_patch",
    )


def test_a_stored_config_becomes_the_config_through_the_options() -> None:
    spec = _spec()

    assert spec.config_from({"text": "hi", "count": 2}) == NoteConfig("hi", 2)
    # Empty values leave the config's own defaults.
    assert spec.config_from({"text": "", "count": None}) == NoteConfig()


def test_unknown_keys_are_refused_with_the_expected_keys() -> None:
    with pytest.raises(PromptValidationError) as refused:
        _spec().config_from({"text": "hi", "colour": 1, "b": 2})

    assert refused.value.message == (
        "Unknown note option(s): b, colour; expected: text, count."
    )
    assert refused.value.placeholder == "config"
    # A lenient kind ignores them.
    assert _spec(strict=False).config_from({"colour": 1}) == NoteConfig()


def test_refused_keys_name_the_option_to_use_instead() -> None:
    spec = _spec(refused={"secret": ("Never store the secret.", "text")})

    with pytest.raises(PromptValidationError) as refused:
        spec.config_from({"secret": "x"})

    assert (refused.value.message, refused.value.placeholder) == (
        "Never store the secret.",
        "text",
    )


def test_a_stored_config_that_is_not_an_object_is_refused() -> None:
    for hostile in (["text"], "text", 3, None):
        with pytest.raises(PromptValidationError, match="JSON object"):
            _spec().config_from(hostile)  # type: ignore[arg-type]


def test_defaults_booleans_and_the_hosts_resolver() -> None:
    spec = _spec(
        options=(
            HostedOption("text", default="none"),
            HostedOption("count", "integer"),
            HostedOption("flag", "boolean", default=True),
        )
    )

    assert spec.values({}) == {"text": "none", "flag": True}
    assert spec.values({"flag": 0, "count": 0}) == {
        "text": "none",
        "count": 0,
        "flag": False,
    }
    seen: list[tuple[str, Any]] = []

    def resolve(option: HostedOption, value: Any) -> Any:
        seen.append((option.name, value))
        return value * 2

    assert spec.values({"count": 4}, resolve)["count"] == 8
    assert seen == [("count", 4)]


def test_a_spec_refuses_malformed_declarations() -> None:
    with pytest.raises(PromptValidationError, match="twice: text"):
        _spec(options=(HostedOption("text"), HostedOption("text")))
    with pytest.raises(PromptValidationError, match="must be an identifier"):
        _spec(kind="no such\x00kind")
    with pytest.raises(PromptValidationError, match="must be an identifier"):
        HostedOption("bad-name")
    with pytest.raises(PromptValidationError, match="unknown shape"):
        HostedOption("x", "colour")  # type: ignore[arg-type]
    with pytest.raises(PromptValidationError, match="without choices"):
        HostedOption("x", "choice")


def test_registering_a_kind_once() -> None:
    spec = register_kind(_spec())
    try:
        assert hosted_kind("note") is spec
        assert hosted_kind_names()[-1] == "note"
        with pytest.raises(PromptValidationError, match="already registered"):
            register_kind(_spec())
    finally:
        unregister_kind("note")
    assert hosted_kind("note") is None
    with pytest.raises(PromptValidationError, match="not registered"):
        unregister_kind("note")
    with pytest.raises(PromptValidationError, match="takes a HostedKindSpec"):
        register_kind("note")  # type: ignore[arg-type]


def test_the_tool_keeps_the_factorys_description_when_blank() -> None:
    spec = _spec()

    assert spec.tool(NoteConfig(), name="n").description == "Take a note."
    assert spec.tool(NoteConfig(), name="n", description="Mine.").description == (
        "Mine."
    )


# -- The shipped kinds' stored JSON, as the catalog has always stored it.


def _config(kind: str, stored: dict[str, Any]) -> Any:
    spec = hosted_kind(kind)
    assert spec is not None
    return spec.config_from(stored)


def test_web_search_groups_domains_and_location() -> None:
    assert _config(
        "web_search",
        {
            "allowed_domains": ["docs.python.org"],
            "country": "GB",
            "city": "London",
            "allow_live_access": False,
            "search_context_size": "low",
        },
    ) == WebSearchConfig(
        domain_filter=DomainFilter(allowed=("docs.python.org",)),
        geo_hint=GeoHint(country_code="GB", city="London"),
        allow_live_access=False,
        search_context_size="low",
    )
    assert _config("web_search", {"allowed_domains": []}) == WebSearchConfig()


def test_file_search_groups_the_ranking_options() -> None:
    assert _config(
        "file_search",
        {"vector_store_ids": ["vs_1"], "ranker": "auto", "score_threshold": 0.5},
    ) == FileSearchConfig(
        vector_store_ids=("vs_1",),
        ranking=RankingOptions(ranker="auto", score_threshold=0.5),
    )
    with pytest.raises(PromptValidationError) as refused:
        _config("file_search", {})
    assert refused.value.placeholder == "vector_store_ids"


def test_code_interpreter_and_shell_take_their_options_as_fields() -> None:
    assert _config(
        "code_interpreter", {"memory_limit": "4g", "file_ids": ["f"]}
    ) == CodeInterpreterConfig(memory_limit="4g", file_ids=("f",))
    assert _config("shell", {"environment": ""}) == ShellConfig()


def test_mcp_never_stores_header_values() -> None:
    with pytest.raises(PromptValidationError) as refused:
        _config("mcp", {"server_label": "crm", "headers": {"A": "b"}})
    assert refused.value.placeholder == "header_env"
    assert "never stored in the catalog" in refused.value.message
    # Without a host resolving them, header_env fills headers as given.
    assert _config(
        "mcp", {"server_label": "crm", "server_url": "https://mcp.example.com"}
    ) == McpConfig(server_label="crm", server_url="https://mcp.example.com")
