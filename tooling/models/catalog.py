"""The catalog's prompts and their sections (the tools and policies they offer
are in ``tools.py``).

Rows hold what operators author; ``tooling.assembly`` turns them into runtime
objects, and forms validate by doing exactly that, so the admin enforces the
same rules (and messages) as the runtime.
"""

from __future__ import annotations

import unicodedata
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import connection, models, transaction
from django.db.models import Q
from django.urls import reverse

from tooling.models.revisions import generation_token
from tooling.models.tools import (
    HostedToolDefinition,
    PolicyDefinition,
    TimestampedModel,
    ToolDefinition,
)
from tooling.runtime.choices import PLANNING_STRATEGY_CHOICES
from tooling.storable_json import StorableJSONField


class SectionDefinition(TimestampedModel):
    """A markdown block of a prompt; sections nest through ``parent``."""

    key = models.CharField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    template = models.TextField(
        blank=True, help_text="Markdown with $placeholders ($$ for a dollar sign)."
    )
    default_params = StorableJSONField(
        "parameters",
        default=dict,
        blank=True,
        help_text='The parameters the template may use, with defaults: {"name": '
        '"default"}; null makes a parameter required. Every $placeholder must be '
        "declared here.",
    )
    planning_strategy = models.CharField(
        max_length=40,
        blank=True,
        choices=list(PLANNING_STRATEGY_CHOICES),
        help_text="Makes this a planning section: the four planning tools are "
        "added to it and the strategy's guidance follows the template.",
    )
    enabled = models.BooleanField(default=True)
    enabled_when_param = models.CharField(
        "enabled only when this parameter is set",
        max_length=64,
        blank=True,
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
    )
    position = models.PositiveIntegerField(default=0)
    tools: models.ManyToManyField[ToolDefinition, SectionTool] = models.ManyToManyField(
        ToolDefinition, through="SectionTool", blank=True, related_name="sections"
    )
    hosted_tools: models.ManyToManyField[HostedToolDefinition, SectionHostedTool] = (
        models.ManyToManyField(
            HostedToolDefinition,
            through="SectionHostedTool",
            blank=True,
            related_name="sections",
        )
    )
    policies = models.ManyToManyField(
        PolicyDefinition, blank=True, related_name="sections"
    )

    class Meta:
        ordering = ["position", "key"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(parent=models.F("id")), name="section_not_own_parent"
            )
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Saves under the section tree's lock, refusing a parent that would
        make the section its own ancestor (also against concurrent edits)."""
        with transaction.atomic(using=kwargs.get("using")):
            lock_section_tree()
            if self.pk is not None and would_cycle(self.pk, self.parent_id):
                raise ValidationError(
                    {"parent": "A section cannot be its own ancestor."}
                )
            super().save(*args, **kwargs)


SECTION_TREE_LOCK = 0x57494E4B  # "WINK": one advisory lock for tree edits


def lock_section_tree() -> None:
    """Serialise section tree edits until the current transaction ends.

    PostgreSQL: a transaction-scoped advisory lock. SQLite needs none: its
    transactions start IMMEDIATE (settings), so writers are serialised anyway.
    """
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SECTION_TREE_LOCK])


def would_cycle(section_id: int, parent_id: int | None) -> bool:
    """Whether giving section ``section_id`` the parent ``parent_id`` makes it
    its own ancestor. One query walking up from ``parent_id`` (reading only
    its ancestors); ``UNION`` drops rows already found, so it terminates on any
    data, cycles included."""
    if parent_id is None:
        return False
    if parent_id == section_id:
        return True
    quote = connection.ops.quote_name
    meta = SectionDefinition._meta
    table = quote(meta.db_table)
    pk = quote(meta.pk.column)
    parent = quote(meta.get_field("parent").column)
    sql = (
        f"WITH RECURSIVE wink_up(id) AS ("
        f"SELECT {pk} FROM {table} WHERE {pk} = %s "
        f"UNION SELECT wink_row.{parent} FROM {table} wink_row "
        f"INNER JOIN wink_up ON wink_row.{pk} = wink_up.id "
        f"WHERE wink_row.{parent} IS NOT NULL) "
        "SELECT 1 FROM wink_up WHERE id = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [parent_id, section_id])
        return cursor.fetchone() is not None


class SectionTool(models.Model):
    section = models.ForeignKey(SectionDefinition, on_delete=models.CASCADE)
    tool = models.ForeignKey(ToolDefinition, on_delete=models.CASCADE)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["section", "tool"], name="unique_section_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.section} -> {self.tool}"


class SectionHostedTool(models.Model):
    section = models.ForeignKey(SectionDefinition, on_delete=models.CASCADE)
    hosted_tool = models.ForeignKey(HostedToolDefinition, on_delete=models.CASCADE)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["section", "hosted_tool"], name="unique_section_hosted_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.section} -> {self.hosted_tool}"


class PromptTemplateQuerySet(models.QuerySet["PromptTemplate"]):
    def enabled(self) -> PromptTemplateQuerySet:
        return self.filter(enabled=True)

    def with_catalog(self) -> PromptTemplateQuerySet:
        """Everything ``assembly.build_prompt`` reads except the section tree."""
        return self.prefetch_related(
            models.Prefetch(
                "prompt_sections",
                queryset=PromptSection.objects.order_by("position", "id"),
            ),
            "policies",
        )

    def with_generation(self) -> PromptTemplateQuerySet:
        """Each template with the catalog's generation token read in the same
        query (``catalog_token``; ``None`` without one): before any other
        catalog row, as ``tooling.generation`` requires."""
        return self.annotate(catalog_token=generation_token())

    def with_release(self) -> PromptTemplateQuerySet:
        """Each template with the hash its ``WINK_DEFAULT_LABEL`` label points
        at (``released_revision``; ``None``: no such label), in the same query
        (a left join on the unique ``(prompt, name)``)."""
        return self.annotate(
            default_label=models.FilteredRelation(
                "labels", condition=Q(labels__name=settings.WINK_DEFAULT_LABEL)
            ),
            released_revision=models.F("default_label__revision_id"),
        )


def validate_prompt_name(value: str) -> None:
    """A prompt's namespace or its key. Runs, releases and the API name a
    prompt ``namespace/key``, so that reference must name one prompt and read
    as what it is: no '/', no whitespace, no control or invisible character
    (a bidi control, a zero-width space)."""
    for position, char in enumerate(value, start=1):
        if char == "/" or char.isspace() or unicodedata.category(char)[0] in "CZ":
            shown = "'/'" if char == "/" else f"U+{ord(char):04X}"
            raise ValidationError(
                "Use no '/', space or invisible character here: the prompt is "
                "named namespace/key (%(char)s at character %(position)s).",
                code="invalid_prompt_name",
                params={"char": shown, "position": position},
            )


class PromptTemplate(TimestampedModel):
    """A prompt: ordered root sections, policies, model and run limits."""

    # checked by validate_prompt_name where a name is typed (the admin's
    # form): a name saved before the rule can still be saved unchanged
    namespace = models.CharField(max_length=100)
    key = models.CharField(max_length=100)
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    model = models.CharField(max_length=100, default="gpt-5.4")
    sections: models.ManyToManyField[SectionDefinition, PromptSection] = (
        models.ManyToManyField(
            SectionDefinition, through="PromptSection", related_name="prompts"
        )
    )
    policies = models.ManyToManyField(
        PolicyDefinition, blank=True, related_name="prompts"
    )
    output_schema = StorableJSONField(
        null=True,
        blank=True,
        help_text="Optional JSON schema (an object) the final answer must satisfy.",
    )
    tool_choice = models.CharField(
        max_length=200,
        default="auto",
        help_text="auto, none, required, tool:NAME, allowed:A,B or "
        "allowed-required:A,B (tool names separated by commas).",
    )
    deadline_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(
                1, "A run's deadline is at least 1 second (empty: the default)."
            )
        ],
    )
    max_total_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(1, "A token limit is at least 1 (empty: no limit).")
        ],
    )
    max_turns = models.PositiveIntegerField(
        default=8,
        validators=[MinValueValidator(1, "A run needs at least one turn.")],
    )
    max_cost_per_session = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        # 0 stopped every run before its first request (an operator typing
        # it for "no limit"): as the token and turn limits, at least one unit
        validators=[
            MinValueValidator(
                Decimal("0.0001"),
                "A run's cost limit is more than $0 (empty: no limit).",
            )
        ],
        help_text="The most one run may spend, in USD (docs/costs.md). "
        "Empty: no limit of its own.",
    )
    hosted_tool_limits = StorableJSONField(
        default=dict,
        blank=True,
        help_text='The most calls per run of each hosted tool, e.g. {"web_search": 2} '
        "(docs/quotas.md). A used-up tool is no longer offered.",
    )
    enabled = models.BooleanField(default=True)

    objects = PromptTemplateQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "key"], name="unique_prompt_namespace_key"
            ),
            models.CheckConstraint(
                condition=Q(max_turns__gte=1), name="max_turns_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return self.ref

    def get_absolute_url(self) -> str:
        return reverse("admin:tooling_prompttemplate_preview", args=[self.pk])

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.key}"


class PromptSection(models.Model):
    prompt = models.ForeignKey(
        PromptTemplate, on_delete=models.CASCADE, related_name="prompt_sections"
    )
    section = models.ForeignKey(SectionDefinition, on_delete=models.CASCADE)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["prompt", "section"], name="unique_prompt_section"
            )
        ]

    def __str__(self) -> str:
        return f"{self.prompt} -> {self.section}"


class ModelCapability(TimestampedModel):
    """Which hosted tool kinds a model may use. Models without a row may use
    every kind the adapter supports."""

    model = models.CharField(max_length=100, unique=True)
    hosted_kinds = StorableJSONField(
        default=list, blank=True, help_text='Allowed kinds, e.g. ["web_search"].'
    )

    class Meta:
        ordering = ["model"]
        verbose_name_plural = "model capabilities"

    def __str__(self) -> str:
        return self.model
