"""A grader's config: what each kind needs and may hold, checked where it is
entered (``check_entered_config``: the admin, the API; a key the kind does not
use is refused by name, an amount must be written plainly) and before each
grade (``check_config``: a stored grader's grades go on as they did).
``grading`` judges sessions with the configs these take."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import jsonschema
import regex
from django.core.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from sessions_app.models import Citation, Grader
from tooling import assembly
from tooling.assembly.parameters import ANY, SCALAR
from tooling.models import PromptTemplate
from tooling.runtime import PromptError
from tooling.runtime.number_text import PLAIN_DECIMAL, plain_decimal
from tooling.runtime.text import BIDI_CONTROLS

Kind = Grader.Kind


def _keys(schema: Any) -> set[str]:
    """Every key of every object in ``schema``, nested ones included."""
    found: set[str] = set()
    if isinstance(schema, dict):
        found.update(schema)
    if isinstance(schema, dict | list):
        for value in schema.values() if isinstance(schema, dict) else schema:
            found |= _keys(value)
    return found


def _values_of(schema: Any, key: str) -> set[str]:
    """The text values of ``key`` in every object of ``schema``."""
    found: set[str] = set()
    if isinstance(schema, dict) and isinstance(schema.get(key), str):
        found.add(schema[key])
    if isinstance(schema, dict | list):
        for value in schema.values() if isinstance(schema, dict) else schema:
            found |= _values_of(value, key)
    return found


def domain(value: str) -> str:
    """``https://Docs.Python.org/3/`` and ``docs.python.org.`` alike."""
    value = value.strip().lower()
    if "://" in value:
        value = Citation.domain_of(value)
    return value.split("/", 1)[0].rstrip(".")


def _text(config: dict[str, Any], key: str) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ValidationError({"config": f'"{key}" must be a non-empty text.'})
    return value


NEEDS = {
    Kind.TOOL_CALLED: ("tool",),
    Kind.TOOL_NOT_CALLED: ("tool",),
    Kind.CALLED_BEFORE: ("first", "then"),
    Kind.DENIED_BY_POLICY: ("policy",),
    Kind.OUTPUT_REGEX: ("pattern",),
    Kind.OUTPUT_CONTAINS: ("text",),
    Kind.MODEL_GRADED: ("prompt",),
}


# The keys each kind's config may hold (the ones it needs and optional ones).
KEYS = {
    **{kind: set(keys) for kind, keys in NEEDS.items()},
    Kind.APPROVAL_REQUESTED: {"tool"},
    Kind.OUTPUT_SCHEMA: {"schema"},
    Kind.OUTPUT_CONTAINS: {"text", "case_sensitive"},
    Kind.CITATIONS_IN_DOMAINS: {"domains"},
    Kind.COST_AT_MOST: {"usd"},
    Kind.TURNS_AT_MOST: {"turns"},
}


def check_entered_config(kind: str, config: Any) -> None:
    """``check_config``, and a key ``kind`` does not use refused by name: where
    a config is entered (the admin, the API). A stored grader's grades ignore
    such a key."""
    check_config(kind, config)
    if kind == Kind.OUTPUT_CONTAINS and not isinstance(
        config.get("case_sensitive", False), bool
    ):
        # "false" (text) read as true graded the other way, without a word
        raise ValidationError(
            {"config": '"case_sensitive" must be true or false (not text or a number).'}
        )
    if kind == Kind.APPROVAL_REQUESTED and "tool" in config:
        _text(config, "tool")  # a number matched no request, silently
    if kind == Kind.COST_AT_MOST:
        amount(config, entered=True)
    elif kind == Kind.CITATIONS_IN_DOMAINS:
        for value in config["domains"]:
            if any(char.isspace() for char in value.strip()) or BIDI_CONTROLS.search(
                value
            ):
                shown = json.dumps(value, ensure_ascii=True)
                raise ValidationError(
                    {"config": f'"domains": {shown[:200]} is not a domain.'}
                )
    elif kind == Kind.MODEL_GRADED:
        # (grading starts it by this name: a misspelt one, or one that does
        # not take what a grader gives it, could grade nothing)
        namespace, _, key = config["prompt"].partition("/")
        template = PromptTemplate.objects.filter(namespace=namespace, key=key).first()
        shown = json.dumps(config["prompt"], ensure_ascii=True)[:200]
        if template is None:
            raise ValidationError(
                {"config": f'"prompt": no prompt template is named {shown}.'}
            )
        problem = _grader_prompt_problem(template)
        if problem:
            raise ValidationError({"config": f'"prompt": {shown} {problem}'})
    keys = KEYS.get(kind, set())  # type: ignore[call-overload]
    unknown = sorted(str(key) for key in config if key not in keys)
    if unknown:
        takes = ", ".join(f'"{key}"' for key in sorted(keys)) or "no key"
        named = ", ".join(f'"{key}"' for key in unknown)
        raise ValidationError(
            {
                "config": f"The {kind} kind does not use {named}: its config "
                f"takes {takes}. Remove it (or correct its spelling)."
            }
        )


#: the parameters a model grader's prompt is run with (``grading``)
GRADER_PARAMS = ("output", "expected", "params")


def _grader_prompt_problem(template: PromptTemplate) -> str:
    """Why ``template`` cannot run as a grader's prompt (empty: it can): it
    must take ``GRADER_PARAMS``, each as text, and need nothing else."""
    try:
        specs = assembly.prompt_parameters(assembly.freeze_template(template))
    except PromptError as error:
        return f"cannot be built: {error}"
    by_name = {spec.name: spec for spec in specs}
    takes = ", ".join(f'"{name}"' for name in sorted(by_name)[:20]) or "none"
    missing = [name for name in GRADER_PARAMS if name not in by_name]
    if missing:
        named = ", ".join(f'"{name}"' for name in missing)
        return (
            f"does not take {named} (it takes: {takes}). A grader's prompt "
            'declares the parameters "output", "expected" and "params", which '
            "a grade fills in with the session's output, the case's expected "
            "output and the session's parameters as JSON."
        )
    needed = sorted(
        name
        for name, spec in by_name.items()
        if spec.required and name not in GRADER_PARAMS
    )
    if needed:
        named = ", ".join(f'"{name}"' for name in needed[:20])
        return (
            f"requires {named}, which a grade does not give: a grader's prompt "
            'takes only "output", "expected" and "params" (give the others a '
            "default)."
        )
    not_text = [
        name
        for name in GRADER_PARAMS
        if by_name[name].type not in (ANY, SCALAR, "string")
    ]
    if not_text:
        named = ", ".join(f'"{name}"' for name in not_text)
        return (
            f"takes {named} as {by_name[not_text[0]].type}: a grade gives each "
            "as text (declare its default as text)."
        )
    return ""


def check_config(kind: str, config: Any) -> None:
    """Refuse a config ``kind`` cannot use, naming the key."""
    if not isinstance(config, dict):
        raise ValidationError({"config": "The config must be a JSON object."})
    for key in NEEDS.get(kind, ()):  # type: ignore[call-overload]
        _text(config, key)
    if kind == Kind.OUTPUT_REGEX:
        try:
            regex.compile(config["pattern"])
        except regex.error as error:
            raise ValidationError(
                {"config": f'"pattern" is not valid: {error}.'}
            ) from None
    elif kind == Kind.OUTPUT_SCHEMA:
        schema = config.get("schema")
        if not isinstance(schema, dict):
            raise ValidationError({"config": '"schema" must be a JSON schema object.'})
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            # a reference that resolves nowhere fails here, not when grading
            list(jsonschema.Draft202012Validator(schema).iter_errors({}))
        except jsonschema.SchemaError as error:
            raise ValidationError(
                {"config": f'"schema" is not a valid JSON schema: {error.message}'}
            ) from None
        except Unresolvable as error:
            # (an anchor, "#x", is the error's anchor: its ref is then "")
            named = str(getattr(error, "ref", "") or "")
            anchor = getattr(error, "anchor", None)
            if not named and anchor is not None:
                named = f"#{anchor}"
            keyword = (
                "$dynamicRef"
                if named in _values_of(schema, "$dynamicRef")
                and named not in _values_of(schema, "$ref")
                else "$ref"
            )
            ref = json.dumps(named, ensure_ascii=False)
            raise ValidationError(
                {
                    "config": f'"schema" cannot be applied: its "{keyword}" '
                    f"{ref[:200]} names nothing in the schema (only references "
                    "inside it are followed: remote ones are not fetched)."
                }
            ) from None
        except RecursionError:
            raise ValidationError(
                {
                    "config": '"schema" cannot be applied: its references lead '
                    "back to themselves without end."
                }
            ) from None
        if {"patternProperties", "unevaluatedProperties"} <= _keys(schema):
            raise ValidationError(
                {
                    "config": '"schema" uses "unevaluatedProperties" with '
                    '"patternProperties", whose patterns could then run without '
                    'a time bound: use "additionalProperties" instead.'
                }
            )
    elif kind == Kind.CITATIONS_IN_DOMAINS:
        domains = config.get("domains")
        if (
            not isinstance(domains, list)
            or not domains
            or not all(isinstance(d, str) and domain(d) for d in domains)
        ):
            raise ValidationError({"config": '"domains" must be a list of domains.'})
    elif kind == Kind.COST_AT_MOST:
        amount(config)
    elif kind == Kind.TURNS_AT_MOST:
        turns = config.get("turns")
        if not isinstance(turns, int) or isinstance(turns, bool) or turns < 0:
            raise ValidationError({"config": '"turns" must be a whole number.'})
    elif kind == Kind.MODEL_GRADED and "/" not in config["prompt"]:
        raise ValidationError({"config": '"prompt" must be "namespace/key".'})


# A cost-at-most grader's amount, entered: at most what the sessions' cost
# filters take (a session's cost has 10 decimal places).
MOST_USD = 100_000_000
USD_PLACES = 10


def amount(config: dict[str, Any], *, entered: bool = False) -> Decimal:
    """The amount: a JSON number, or text. Where it is ``entered``, text
    written plainly (``"0.05"``; not ``"1_000"``, ``"1e400"`` or another
    script's digits, which Python's ``Decimal`` reads and other programs
    reading the config do not); a stored grader's text as ``Decimal`` reads
    it, finite (its grades go on as they did)."""
    usd = config.get("usd")
    value: Decimal | None = None
    if isinstance(usd, str) and entered:
        value = plain_decimal(usd)
    elif isinstance(usd, str):
        try:
            value = Decimal(usd.strip())
        except ArithmeticError:
            value = None
        if value is not None and not value.is_finite():
            value = None
    elif isinstance(usd, int) and not isinstance(usd, bool):
        value = Decimal(usd)
    elif isinstance(usd, float) and math.isfinite(usd):
        value = Decimal(str(usd))
    if value is None or value < 0:
        raise ValidationError(
            {
                "config": '"usd" must be an amount: a number, or text of '
                f"{PLAIN_DECIMAL}."
            }
        )
    # (its places as written less trailing zeros: "0.10000000000" is 0.1)
    exponent = value.normalize().as_tuple().exponent  # (finite: an int)
    places = -exponent if isinstance(exponent, int) else 0
    if entered and (value > MOST_USD or places > USD_PLACES):
        # what a session's cost can hold, as the sessions' cost filters take
        raise ValidationError(
            {
                "config": f'"usd" must be at most {MOST_USD:,}, with at most '
                f"{USD_PLACES} decimal places."
            }
        )
    return value
