"""The experiments API's serializers: datasets (with their cases; the list
gives each one's size), graders and experiments, as bodies (strict: an
unknown field, or a number where text goes, is a 400 naming it) and as
answers. A dataset's or grader's name lost to a concurrent create is the
sequential 400 (``UniqueNameSerializer``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from sessions_app.models import Dataset, DatasetCase, Experiment, Grader
from tooling.api.input import StrictSerializer, refuse_too_large
from tooling.forms.editors import quoted
from tooling.models import PromptTemplate

from . import grader_config
from .cases import MOST_CASES
from .running import TARGET, unknown_targets


class UniqueNameSerializer(serializers.ModelSerializer[Any]):
    """Creates a row whose ``name`` is unique. DRF's ``UniqueValidator`` reads
    before the insert: two requests with the same new name both pass it, and
    the later insert breaks the unique constraint. That insert runs in a
    savepoint, and its ``IntegrityError``, once the name is found taken, is
    the validator's own 400 (``name``: already exists), as when the requests
    come one after the other."""

    def create(self, validated_data: dict[str, Any]) -> Any:
        try:
            with transaction.atomic():
                return self.create_row(validated_data)
        except IntegrityError:
            unique = next(
                validator
                for validator in self.fields["name"].validators
                if isinstance(validator, UniqueValidator)
            )
            if not unique.queryset.filter(name=validated_data.get("name")).exists():
                raise  # another constraint: not the name's
            raise serializers.ValidationError({"name": [unique.message]}) from None

    def create_row(self, validated_data: dict[str, Any]) -> Any:
        """The insert, in the savepoint (with what goes with the row)."""
        return super().create(validated_data)


class CaseSerializer(StrictSerializer, serializers.ModelSerializer[DatasetCase]):
    closed_schema = False  # also a response's shape

    class Meta:
        model = DatasetCase
        fields = ["id", "position", "params", "trust_level", "expected_output", "notes"]
        read_only_fields = ["id"]


class DatasetSerializer(StrictSerializer, UniqueNameSerializer):
    closed_schema = False  # also a response's shape
    cases = CaseSerializer(many=True, required=False)

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "created_at", "cases"]
        read_only_fields = ["id", "created_at"]

    def refuse_too_large(self, data: Mapping[Any, Any]) -> None:
        # each case's params are its runs' parameters: a 413 past a run
        # start's limit, naming the case (the model refuses them elsewhere)
        super().refuse_too_large(data)
        cases = data.get("cases")
        for index, case in enumerate(cases if isinstance(cases, list) else []):
            if isinstance(case, Mapping):
                refuse_too_large(case.get("params"), f"cases.{index}.params")

    def validate_cases(self, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(cases) > MOST_CASES:
            raise serializers.ValidationError(
                f"A dataset holds at most {MOST_CASES} cases (an experiment runs "
                f"at most {MOST_CASES}); got {len(cases)}."
            )
        return cases

    def create_row(self, validated_data: dict[str, Any]) -> Dataset:
        cases = validated_data.pop("cases", [])
        dataset = Dataset.objects.create(**validated_data)
        DatasetCase.objects.bulk_create(
            DatasetCase(dataset=dataset, **{"position": index + 1, **case})
            for index, case in enumerate(cases)
        )
        return dataset


class DatasetListSerializer(serializers.ModelSerializer[Dataset]):
    """A dataset in the list: its size, not its cases (a list of datasets of
    thousands of cases each would be megabytes a page; ``<id>/`` has them)."""

    case_count = serializers.IntegerField(
        read_only=True, help_text="How many cases it holds."
    )

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "created_at", "case_count"]
        read_only_fields = fields


class GraderSerializer(StrictSerializer, UniqueNameSerializer):
    closed_schema = False  # also a response's shape

    class Meta:
        model = Grader
        fields = ["id", "name", "kind", "config", "description"]
        read_only_fields = ["id"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            grader_config.check_entered_config(attrs["kind"], attrs.get("config", {}))
        except DjangoValidationError as error:
            raise serializers.ValidationError({"config": error.messages}) from error
        return attrs


class ExperimentSerializer(serializers.ModelSerializer[Experiment]):
    dataset: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    graders: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True
    )

    class Meta:
        model = Experiment
        fields = [
            "id",
            "name",
            "dataset",
            "prompt_ref",
            "targets",
            "graders",
            "status",
            "created_at",
        ]
        read_only_fields = fields


class NameField(serializers.SlugRelatedField[Any]):
    """A dataset or a grader by its name, trimmed as names are when created
    (``" =1+2"`` names ``=1+2``)."""

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(
            data.strip() if isinstance(data, str) else data
        )


class ExperimentRequestSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    dataset = NameField(slug_field="name", queryset=Dataset.objects.all())
    prompt = serializers.CharField(max_length=201, help_text='"namespace/key"')
    targets = serializers.ListField(
        child=serializers.RegexField(
            TARGET.pattern,
            error_messages={
                "invalid": "Enter 'draft', 'label:<name>' (a label is 1 to 32 "
                "lower-case letters, digits, '-' or '_', starting with a letter) "
                "or a revision's hash (64 characters, digits and a-f)."
            },
        ),
        min_length=1,
        max_length=10,
        help_text='"draft", "label:<name>" or a revision\'s hash; each once.',
    )
    graders = NameField(slug_field="name", queryset=Grader.objects.all(), many=True)

    def validate_prompt(self, value: str) -> str:
        namespace, _, key = value.strip().partition("/")
        if not PromptTemplate.objects.filter(namespace=namespace, key=key).exists():
            raise serializers.ValidationError(
                f"No prompt template is named {quoted(value)}."
            )
        return f"{namespace}/{key}"

    def validate_targets(self, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Name each target once.")
        return value

    def validate_graders(self, value: list[Grader]) -> list[Grader]:
        if len({grader.pk for grader in value}) != len(value):
            raise serializers.ValidationError("Name each grader once.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = unknown_targets(attrs["prompt"], attrs["targets"])
        if unknown:
            raise serializers.ValidationError({"targets": unknown})
        return attrs


class ResultsSerializer(serializers.Serializer[Any]):
    experiment = ExperimentSerializer()
    targets = serializers.JSONField(
        help_text="Per target: runs, finished, paused, failed_to_start, pass_rates "
        "(per grader; null: none decided), cost, mean_seconds."
    )
    cases = serializers.JSONField(
        help_text="Per case: its params, whether the targets' grades differ, and "
        "each target's session, error and grades."
    )
