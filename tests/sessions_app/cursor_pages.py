"""Walking an API list's cursor pages, as a client does."""

from typing import Any


def listed_ids(client: Any, url: str, query: dict[str, Any]) -> list[Any]:
    """The ids of every row of ``url`` with ``query``, following each
    page's ``next`` link until there is none, in the order listed."""
    ids: list[Any] = []
    next_url: str | None = url
    while next_url:
        body = client.get(next_url, query).json()
        ids += [row["id"] for row in body["results"]]
        next_url, query = body["next"], {}
    return ids


def listed_back(client: Any, url: str, query: dict[str, Any]) -> list[Any]:
    """The ids of every row of ``url`` with ``query`` read from its last page
    back to its first, following each ``previous`` link, in list order."""
    body = client.get(url, query).json()
    while body["next"]:
        body = client.get(body["next"]).json()
    pages = [[row["id"] for row in body["results"]]]
    while body["previous"]:
        body = client.get(body["previous"]).json()
        pages.insert(0, [row["id"] for row in body["results"]])
    return [pk for page in pages for pk in page]
