"""Small text tools for demos: framework-free handlers over the runtime."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tooling.runtime import Tool, ToolContext, ToolExample, ToolResult

if TYPE_CHECKING:
    from tooling.handlers import HandlerRegistry


@dataclasses.dataclass(frozen=True, slots=True)
class CountWordsParams:
    text: str = dataclasses.field(
        metadata={"description": "The text whose words to count.", "max_length": 20000}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class WordCount:
    words: int
    characters: int

    def render(self) -> str:
        return f"{self.words} words, {self.characters} characters"


def count_words(
    params: CountWordsParams, *, context: ToolContext
) -> ToolResult[WordCount]:
    count = WordCount(words=len(params.text.split()), characters=len(params.text))
    return ToolResult.ok(count, message=f"Counted {count.words} word(s).")


def text_tools() -> tuple[Tool[CountWordsParams, WordCount], ...]:
    return (
        Tool(
            name="count_words",
            description="Count the words and characters of a text.",
            handler=count_words,
            read_only=True,
            examples=(
                ToolExample(
                    description="Count a short sentence.",
                    input=CountWordsParams(text="Django 5.2 is an LTS release."),
                    output=WordCount(words=6, characters=29),
                ),
            ),
        ),
    )


def register_handlers(registry: HandlerRegistry) -> None:
    """Register ``demo.count_words`` (``docs/handlers.md``)."""
    registry.register_group("demo", text_tools())
