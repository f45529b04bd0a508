"""``Citation``: a cited source, shared by every kind that cites.

Web search cites URLs, file search and code interpreter cite files; the
adapter reads them all from message annotations. ``tooling.runtime.hosted.
web_search`` re-exports both names for older imports.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


@dataclasses.dataclass(frozen=True, slots=True)
class Citation:
    """A cited source: where it points and which span of text it supports.

    ``kind`` is the annotation type (``url_citation``, ``file_citation``,
    ``container_file_citation``); file citations carry ids instead of a URL.
    """

    url: str
    title: str
    span: tuple[int, int] | None = None
    cited_text: str = ""
    kind: str = "url_citation"
    file_id: str | None = None
    filename: str | None = None
    container_id: str | None = None
    message_id: str | None = None
    content_index: int = 0
    search_call_id: str | None = None
    """The id of the native call this citation most likely came from (the API
    does not link them itself): for a URL, the latest earlier
    ``web_search_call`` that listed it among its sources; for a file, the
    latest earlier ``file_search_call`` whose results named it; for a
    container file, the latest earlier ``code_interpreter_call`` in its
    container; else the latest earlier call of that type."""


# Query parameters the provider adds to cited URLs (not part of the source).
_TRACKING_PARAMS = frozenset({"utm_source"})


def source_key(url: str) -> str:
    """``url`` reduced for comparing a citation with a search's sources.

    Citations often come back as ``...?utm_source=openai`` while the search
    listed the bare URL; scheme and host case, the fragment and a trailing
    slash do not name a different source either.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if k not in _TRACKING_PARAMS
        ]
    )
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, query, ""))


__all__ = ["Citation", "source_key"]
