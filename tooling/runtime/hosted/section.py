"""``HostedToolSection``: the section that documents and exposes one hosted
tool, the base of each kind's section (``WebSearchSection`` and the rest).

A kind declares its section in a few lines: the config type (the subscript),
the default key (also the tool's default name), title and template, and the
factory that builds its tool from a config::

    class WebSearchSection(HostedToolSection[WebSearchConfig]):
        default_key = "web_search"
        default_title = "Web Search"
        default_template = WEB_SEARCH_TEMPLATE
        tool_factory = web_search_tool

A template that depends on the config overrides ``section_template``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, Self, cast

from ..errors import PromptValidationError
from ..sections import EnabledPredicate, MarkdownSection
from .base import ConfigT, HostedTool


class HostedToolSection(MarkdownSection[Any], Generic[ConfigT]):
    """A section exposing one hosted tool built from ``config``.

    ``key`` defaults to the kind's ``default_key``, ``name`` (the tool's
    name) to the same, ``title`` to ``default_title``. The factory checks the
    config (a kind whose tool needs one refuses ``None``).
    """

    default_key: ClassVar[str]
    default_title: ClassVar[str]
    default_template: ClassVar[str] = ""
    tool_factory: ClassVar[Callable[..., HostedTool[Any]]]

    def __init__(
        self,
        config: ConfigT | None = None,
        *,
        key: str | None = None,
        name: str | None = None,
        title: str | None = None,
        enabled: bool | EnabledPredicate = True,
    ) -> None:
        tool = type(self).tool_factory(
            config, name=self.default_key if name is None else name
        )
        super().__init__(
            title=self.default_title if title is None else title,
            key=self.default_key if key is None else key,
            template=self.section_template(tool.config),
            enabled=enabled,
            hosted_tools=(tool,),
        )

    def section_template(self, config: ConfigT) -> str:
        """The section's text for ``config`` (the kind's default template)."""
        return self.default_template

    @property
    def tool(self) -> HostedTool[ConfigT]:
        return cast(HostedTool[ConfigT], self._hosted_tools[0])

    @property
    def config(self) -> ConfigT:
        return self.tool.config

    def clone(self, **kwargs: Any) -> Self:
        """A copy with section options replaced, as ``Section.clone``; the tool
        is changed with ``config=`` and ``name=`` (a new config also renews a
        template derived from it unless ``template=`` is given)."""
        if "hosted_tools" in kwargs:
            raise PromptValidationError(
                f"{type(self).__name__}.clone() takes config= and name= instead "
                "of hosted_tools=.",
                section_path=(self.key,),
                placeholder="hosted_tools",
            )
        tool = self.tool
        if "config" in kwargs or "name" in kwargs:
            config = kwargs.pop("config", tool.config)
            tool = type(self).tool_factory(config, name=kwargs.pop("name", tool.name))
            kwargs.setdefault("template", self.section_template(tool.config))
        return super().clone(hosted_tools=(tool,), **kwargs)
