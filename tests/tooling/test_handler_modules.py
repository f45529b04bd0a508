"""Handlers come from the modules named in ``WINK_HANDLER_MODULES``
(``tooling/handlers.py``, loaded by ``tooling/apps.py``, reported by the
``tooling.E001`` system check)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from sessions_app import services
from sessions_app.models import AgentSession
from tests.limits import SUBPROCESS_SECONDS
from tooling.checks import check_handler_modules
from tooling.handlers import (
    MAX_KEY_LENGTH,
    HandlerRegistry,
    load_handler_modules,
    registry,
)
from tooling.models import (
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)
from tooling.offline import ScriptedModel, offline_transport, parallel_calls_script

MODULES = "tests.tooling.handler_modules"
PRODUCT = ["tooling.runtime_tools", "tooling.builtin_tools", "tooling.text_tools"]


def loaded(modules: object) -> tuple[HandlerRegistry, list[str]]:
    fresh = HandlerRegistry()
    return fresh, [str(error) for error in load_handler_modules(modules, fresh)]


def test_the_default_setting_names_the_products_modules():
    assert settings.WINK_HANDLER_MODULES == PRODUCT


def test_the_app_registered_the_products_handlers_when_ready():
    fresh, errors = loaded(PRODUCT)
    assert errors == []
    assert list(fresh) == [key for key in registry if key in fresh]
    assert {"planning.planning_setup_plan", "vfs.read_file", "demo.lint"} <= set(fresh)
    assert "demo.count_words" in registry


@override_settings(WINK_HANDLER_MODULES=[*PRODUCT, f"{MODULES}.shouting"])
def test_a_deployment_module_named_in_the_setting_registers_its_handler():
    fresh, errors = loaded(settings.WINK_HANDLER_MODULES)
    assert errors == []
    assert "acme.shout" in fresh
    assert "demo.lint" in fresh
    assert fresh.get("acme.shout").description == "Shout a text back."
    assert check_handler_modules() == []


@pytest.fixture
def shouting_prompt() -> Iterator[str]:
    """The shouting module loaded into the product's registry, as the app
    does when the setting names it, and a prompt whose tool is bound to it."""
    assert load_handler_modules([f"{MODULES}.shouting"], registry) == []
    tool = ToolDefinition.objects.create(name="shout", handler_key="acme.shout")
    section = SectionDefinition.objects.create(
        key="shouting", title="Shouting", template="Shout."
    )
    SectionTool.objects.create(section=section, tool=tool, position=0)
    template = PromptTemplate.objects.create(
        namespace="tests", key="shouting", model="gpt-5.4", max_turns=5
    )
    PromptSection.objects.create(prompt=template, section=section, position=0)
    yield template.ref
    registry.unregister("acme.shout")


@pytest.mark.django_db
def test_a_catalog_tool_bound_to_a_deployment_handler_runs(shouting_prompt):
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://offline-provider.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(  # type: ignore[arg-type]
            transport=offline_transport(
                ScriptedModel(script=parallel_calls_script(1, 1, "shout"))
            )
        ),
        max_retries=0,
    )
    session = services.start_session(prompt_ref=shouting_prompt, client=client)

    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    invocation = session.tool_invocations.get()
    assert (invocation.name, invocation.success) == ("shout", True)
    assert invocation.rendered_output == "TURN 1 CALL 1"


def test_a_duplicate_key_refuses_the_whole_module_and_names_it():
    fresh, errors = loaded([*PRODUCT, f"{MODULES}.clashing"])
    assert errors == [
        f"Handler module '{MODULES}.clashing': handler 'demo.lint' is already "
        "registered by module 'tooling.builtin_tools'; each key must be "
        "registered once."
    ]
    # Nothing of the refused module was registered, the others all were.
    assert "clashing.lint" not in fresh
    assert fresh.get("demo.lint") is not None
    assert "vfs.write_file" in fresh


def test_a_key_registered_before_loading_is_a_duplicate_too():
    fresh = HandlerRegistry()
    fresh.register("acme.shout", registry.get("demo.count_words"))
    errors = load_handler_modules([f"{MODULES}.shouting"], fresh)
    assert [str(error) for error in errors] == [
        f"Handler module '{MODULES}.shouting': handler 'acme.shout' is already "
        "registered by an earlier registration; each key must be registered once."
    ]
    assert fresh.get("acme.shout") is registry.get("demo.count_words")


def test_a_module_listed_twice_is_refused_the_second_time():
    fresh, errors = loaded(["tooling.text_tools", "tooling.text_tools"])
    assert errors == ["Handler module 'tooling.text_tools': listed more than once."]
    assert list(fresh) == ["demo.count_words"]


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("acme_missing.handlers", "no such module."),
        (f"{MODULES}.no_such_module", "no such module."),
        (
            f"{MODULES}.missing_dependency",
            "importing it failed: ModuleNotFoundError: No module named "
            "'wink_not_installed_dependency'",
        ),
        (
            f"{MODULES}.broken_import",
            "importing it failed: RuntimeError: the handler module's "
            "configuration is missing",
        ),
        (
            f"{MODULES}.failing_register",
            "register_handlers() failed: ValueError: Handler 'failing.nothing' "
            "has no handler function.",
        ),
        (
            f"{MODULES}.without_function",
            "it defines no register_handlers(registry) function.",
        ),
        (f"{MODULES}.registering_nothing", "it registered no handler."),
        ("", "not a dotted module path (such as 'acme.handlers')."),
        ("acme..handlers", "not a dotted module path (such as 'acme.handlers')."),
        ("acme/handlers.py", "not a dotted module path (such as 'acme.handlers')."),
        ("acme.hand\x00lers", "not a dotted module path (such as 'acme.handlers')."),
        ("acme.\udcff", "not a dotted module path (such as 'acme.handlers')."),
    ],
)
def test_a_bad_module_is_an_error_naming_it(module, message):
    fresh, errors = loaded([module, "tooling.text_tools"])
    assert errors == [f"Handler module {module!r}: {message}"]
    assert list(fresh) == ["demo.count_words"]


def test_a_huge_module_path_is_refused_and_shortened_in_the_error():
    fresh, errors = loaded(["a" * 100_000])
    assert errors == [
        f"Handler module '{'a' * 77}...': not a dotted module path (such as "
        "'acme.handlers')."
    ]
    assert len(fresh) == 0


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        ("tooling.text_tools", "must be a list of dotted module paths; got str."),
        (None, "must be a list of dotted module paths; got NoneType."),
        ([["tooling.text_tools"]], "each entry must be a string; got list."),
        ([b"tooling.text_tools"], "each entry must be a string; got bytes."),
    ],
)
def test_a_setting_of_the_wrong_type_is_an_error(modules, message):
    fresh, errors = loaded(modules)
    assert errors == [f"WINK_HANDLER_MODULES: {message}"]
    assert len(fresh) == 0


def test_an_empty_list_registers_no_handler():
    fresh, errors = loaded([])
    assert (errors, len(fresh)) == ([], 0)


@override_settings(
    WINK_HANDLER_MODULES=[*PRODUCT, "acme_missing.handlers", f"{MODULES}.clashing"]
)
def test_manage_py_check_reports_each_bad_module():
    messages = check_handler_modules()
    assert [(message.id, message.msg) for message in messages] == [
        ("tooling.E001", "Handler module 'acme_missing.handlers': no such module."),
        (
            "tooling.E001",
            f"Handler module '{MODULES}.clashing': handler 'demo.lint' is already "
            "registered by module 'tooling.builtin_tools'; each key must be "
            "registered once.",
        ),
    ]
    assert messages[0].hint is not None
    assert "WINK_HANDLER_MODULES" in messages[0].hint
    with pytest.raises(SystemCheckError, match=r"tooling\.E001.*acme_missing"):
        call_command("check")
    # The check loads into a registry of its own: the product's is untouched.
    assert "clashing.lint" not in registry


def test_the_check_passes_on_the_default_setting():
    assert check_handler_modules() == []


def _manage_check(modules: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parents[2],
        env={**env, "DEBUG": "1", "WINK_HANDLER_MODULES": modules},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )


def test_the_environment_variable_names_the_modules_manage_py_check_loads():
    good = _manage_check(f"{','.join(PRODUCT)}, {MODULES}.shouting")
    assert good.returncode == 0, good.stderr
    assert "no issues" in good.stdout

    bad = _manage_check(f"{','.join(PRODUCT)},acme_missing.handlers")
    assert bad.returncode != 0
    assert (
        "(tooling.E001) Handler module 'acme_missing.handlers': no such module."
        in bad.stderr
    )


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        ("", ValueError, "must be dot-separated words"),
        ("acme shout", ValueError, "must be dot-separated words"),
        ("acme..shout", ValueError, "must be dot-separated words"),
        (".acme", ValueError, "must be dot-separated words"),
        ("acme.\x00", ValueError, "must be dot-separated words"),
        ("acme.\udcff", ValueError, "must be dot-separated words"),
        ("acme.<b>", ValueError, "must be dot-separated words"),
        ("a" * 101, ValueError, "is longer than 100 characters"),
        (b"acme.shout", TypeError, "must be a string; got bytes"),
    ],
)
def test_a_key_the_catalog_cannot_hold_is_refused(key, error, message):
    fresh = HandlerRegistry()
    with pytest.raises(error, match=message):
        fresh.register(key, registry.get("demo.count_words"))
    assert len(fresh) == 0


def test_a_key_of_the_longest_length_the_catalog_holds_is_taken():
    assert ToolDefinition._meta.get_field("handler_key").max_length == MAX_KEY_LENGTH
    fresh = HandlerRegistry()
    key = "acme." + "a" * 95
    fresh.register(key, registry.get("demo.count_words"))
    assert list(fresh) == [key]


def test_something_other_than_a_tool_is_refused():
    fresh = HandlerRegistry()
    with pytest.raises(TypeError, match=r"must be a tooling\.runtime\.Tool; got"):
        # A handler, not a Tool: mypy refuses it too; the registry must as well.
        fresh.register("acme.shout", registry.get("demo.count_words").handler)  # type: ignore[arg-type]
