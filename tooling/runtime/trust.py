"""Trust levels: which hosted tools a session may be offered.

A session runs at a trust level; each hosted tool names the lowest level it
may be offered at. Rendering leaves out the hosted tools above the session's
level (seed 001: native tools are disabled automatically when the session's
trust level prohibits them) and reports them, so the audit trail can say what
was withheld and why.
"""

from __future__ import annotations

import dataclasses
import enum

from .errors import PromptValidationError


class TrustLevel(enum.IntEnum):
    """Ordered: ``UNTRUSTED < STANDARD < TRUSTED``."""

    UNTRUSTED = 0
    STANDARD = 1
    TRUSTED = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: TrustLevel | str) -> TrustLevel:
        """A level from itself or its label (``"untrusted"`` ...)."""
        if isinstance(value, TrustLevel):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        labels = ", ".join(level.label for level in cls)
        raise PromptValidationError(
            f"Unknown trust level {value!r}; expected one of: {labels}.",
            placeholder="trust_level",
        )


@dataclasses.dataclass(frozen=True, slots=True)
class WithheldTool:
    """A hosted tool left out of a rendering because of the trust level."""

    name: str
    kind: str
    min_trust: TrustLevel
    trust_level: TrustLevel

    def as_dict(self) -> dict[str, str]:
        """The JSON form the audit trail stores."""
        return {
            "name": self.name,
            "kind": self.kind,
            "min_trust_level": self.min_trust.label,
            "reason": self.reason,
        }

    @property
    def reason(self) -> str:
        return (
            f"Hosted tool '{self.name}' ({self.kind}) needs trust level "
            f"'{self.min_trust.label}'; this session runs at "
            f"'{self.trust_level.label}'."
        )
