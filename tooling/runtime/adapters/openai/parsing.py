"""Reading a Responses API response: its output items and id, the messages
and the citations the items hold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...citations import Citation, source_key
from .codecs.base import field

#: the item types any response may hold that no hosted tool's codec reads
BASE_ITEM_TYPES = frozenset({"reasoning", "message", "function_call"})


def output_items(data: Mapping[str, Any]) -> list[Any]:
    """The ``output`` items of the response ``data`` (none if not a list)."""
    output = data.get("output")
    return list(output) if isinstance(output, list) else []


def response_id(data: Mapping[str, Any]) -> str | None:
    """The id of the response ``data``, if it has one."""
    value = data.get("id")
    return value if isinstance(value, str) and value else None


def _text_parts(item: Any) -> Iterable[tuple[int, Any]]:
    for index, part in enumerate(field(item, "content", []) or []):
        if field(part, "type") == "output_text":
            yield index, part


COMMENTARY = "commentary"
FINAL_ANSWER = "final_answer"


def _phase(item: Any) -> str | None:
    phase = field(item, "phase")
    return phase if isinstance(phase, str) else None


def _joined(messages: Iterable[Any]) -> str:
    return "".join(
        str(field(part, "text", ""))
        for message in messages
        for _, part in _text_parts(message)
    )


def _messages(items: Sequence[Any]) -> list[Any]:
    return [item for item in items if field(item, "type") == "message"]


def answer_messages(items: Sequence[Any]) -> list[Any]:
    """The messages that are the model's answer.

    Newer models mark each message with a ``phase``: ``commentary`` (what it
    is about to do) or ``final_answer``. When any message has a phase, only
    the ``final_answer`` ones are the answer; otherwise every message is.
    """
    messages = _messages(items)
    if any(_phase(message) is not None for message in messages):
        return [m for m in messages if _phase(m) == FINAL_ANSWER]
    return messages


def message_text(items: Sequence[Any]) -> str:
    """The answer's text: the ``output_text`` of ``answer_messages``, in order
    (commentary is not part of it)."""
    return _joined(answer_messages(items))


def commentary_texts(items: Sequence[Any]) -> tuple[str, ...]:
    """The text of each ``commentary`` message, in order."""
    return tuple(
        _joined([message])
        for message in _messages(items)
        if _phase(message) == COMMENTARY
    )


def only_commentary(items: Sequence[Any]) -> bool:
    """Whether the model only commented: a commentary message, and no answer
    (no ``final_answer``): the response is not the end of the run."""
    return bool(commentary_texts(items)) and not answer_messages(items)


# The call item each citation kind points back to.
_ORIGIN_OF_KIND = {
    "url_citation": "web_search_call",
    "file_citation": "file_search_call",
    "container_file_citation": "code_interpreter_call",
}
_ORIGIN_TYPES = frozenset(_ORIGIN_OF_KIND.values())


def _listed(value: Any) -> list[Any]:
    """``value`` when it is a JSON array (the provider's items are untrusted)."""
    return list(value) if isinstance(value, list | tuple) else []


def _origin_keys(item_type: str, item: Any) -> frozenset[str]:
    """What a call item names that a citation of it names too: the URLs a
    web search listed, the files a file search returned, the container of a
    code run."""
    if item_type == "web_search_call":
        action = field(item, "action")
        sources = _listed(field(action, "sources") if action is not None else None)
        return frozenset(
            source_key(url)
            for url in (field(source, "url") for source in sources)
            if isinstance(url, str) and url
        )
    if item_type == "file_search_call":
        results = _listed(field(item, "results"))
        return frozenset(
            file_id
            for file_id in (field(result, "file_id") for result in results)
            if isinstance(file_id, str) and file_id
        )
    container = field(item, "container_id")
    return frozenset([container] if isinstance(container, str) and container else [])


class _CallLog:
    """The cited kinds' call items seen so far, to tell where a citation came
    from (the API does not link them itself)."""

    def __init__(self) -> None:
        self._calls: dict[str, list[tuple[str, frozenset[str]]]] = {}

    def add(self, item: Any) -> bool:
        """Remember ``item`` if it is a call citations point to; say whether
        it was."""
        item_type = field(item, "type")
        if not isinstance(item_type, str) or item_type not in _ORIGIN_TYPES:
            return False
        keys = _origin_keys(item_type, item)
        self._calls.setdefault(item_type, []).append((str(field(item, "id", "")), keys))
        return True

    def origin_of(self, kind: str, key: Any) -> str | None:
        """For a citation of ``kind`` naming ``key`` (a URL's ``source_key``,
        a file id, a container id): the latest call that named it, else the
        latest call of the kind's type, if any."""
        calls = self._calls.get(_ORIGIN_OF_KIND[kind], [])
        for call_id, keys in reversed(calls):
            if isinstance(key, str) and key in keys:
                return call_id or None
        return (calls[-1][0] or None) if calls else None


def citations_from_items(
    items: Sequence[Any], *, earlier: Sequence[Any] = ()
) -> list[Citation]:
    """Every citation annotation of every text part of every message.

    Each is linked to the call it most likely came from (``search_call_id``):
    a URL to a ``web_search_call``, a file to a ``file_search_call``, a
    container file to a ``code_interpreter_call``, looking at the calls before
    the message in ``items`` and in ``earlier`` (the run's previous output
    items).
    """
    searches = _CallLog()
    for item in earlier:
        searches.add(item)
    citations: list[Citation] = []
    for item in items:
        if searches.add(item) or field(item, "type") != "message":
            continue
        message_id = field(item, "id")
        for index, part in _text_parts(item):
            text = str(field(part, "text", ""))
            for annotation in field(part, "annotations", []) or []:
                citation = _citation(annotation, text, message_id, index, searches)
                if citation is not None:
                    citations.append(citation)
    return citations


def _span(annotation: Any, text: str) -> tuple[tuple[int, int] | None, str]:
    start, end = field(annotation, "start_index"), field(annotation, "end_index")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end:
        return (start, end), text[start:end]
    return None, ""


def _citation(
    annotation: Any, text: str, message_id: Any, index: int, searches: _CallLog
) -> Citation | None:
    kind = field(annotation, "type")
    if kind == "url_citation":
        span, cited = _span(annotation, text)
        url = str(field(annotation, "url", ""))
        return Citation(
            url=url,
            title=str(field(annotation, "title", "")),
            span=span,
            cited_text=cited,
            kind=kind,
            message_id=message_id,
            content_index=index,
            search_call_id=searches.origin_of(kind, source_key(url)),
        )
    if kind == "container_file_citation":
        span, cited = _span(annotation, text)
        return Citation(
            url="",
            title=str(field(annotation, "filename", "")),
            span=span,
            cited_text=cited,
            kind=kind,
            file_id=field(annotation, "file_id"),
            filename=field(annotation, "filename"),
            container_id=field(annotation, "container_id"),
            message_id=message_id,
            content_index=index,
            search_call_id=searches.origin_of(kind, field(annotation, "container_id")),
        )
    if kind == "file_citation":
        position = field(annotation, "index")
        span = (position, position) if isinstance(position, int) else None
        return Citation(
            url="",
            title=str(field(annotation, "filename", "")),
            span=span,
            kind=kind,
            file_id=field(annotation, "file_id"),
            filename=field(annotation, "filename"),
            message_id=message_id,
            content_index=index,
            search_call_id=searches.origin_of(kind, field(annotation, "file_id")),
        )
    return None
