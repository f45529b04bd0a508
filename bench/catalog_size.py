"""Prompt assembly against catalog size: does a prompt cost the same beside 10
unrelated sections as beside 10,000?

Two databases are built: the demo catalog beside ``--small`` unrelated
sections, and a copy of it with ``--large`` (nested three deep, positions
mixed with the demo's, with tools, hosted tools and policies linked to them
and prompts using them, all bulk-created). Each keeps its own open
connection, and the workflows below run against one then the other, run by
run (which goes first alternates), for the demo prompt ``demo/research``:

- ``preview_prompt``: ``tooling.services.preview_prompt`` of the loaded
  template (freeze, build, render and serialise; what the admin preview and
  the API's preview endpoint run);
- ``start_session, queued``: ``sessions_app.services.start_session`` with the
  run left to a worker (load, preview, revision, session row): the part of a
  start that could grow with the catalog, without the run's time to hide it;
- ``start_session, inline``: the same, run inline to its end against the
  offline provider (the whole conversation, recorded);
- ``prompts_broken_by``: the check an admin edit of one of the prompt's tools
  makes against every saved prompt.

The cache of frozen revisions (ADR 0010) is off: the figures are what a
start costs on a catalog generation it has not seen.

Each figure is the median of ``--runs`` runs after ``--warmup`` untimed
ones; each ratio is the median of the ratios of neighbouring runs (large /
small), so a noisy machine still gives a fair figure. The statements of one
run are printed beside (the same on both: the queries do not depend on the
catalog), and both databases must give the prompt the same revision hash.

The databases are temporary: SQLite files in a temporary directory by default;
with ``DATABASE_URL`` (PostgreSQL) databases named after it with
``_catalog_size`` (and ``_catalog_size_large``) appended, created for the run,
analysed after loading (as autovacuum would) and dropped afterwards. Run with
``make bench-catalog``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 1.2  # large catalog / small catalog, at most
PROMPT_REF = "demo/research"
EDITED_TOOL = "count_words"  # a tool of PROMPT_REF, disabled by the checked edit


def configure(tmp: str) -> str:
    """Point the settings at a temporary database; returns the vendor."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "wink_project.settings"
    os.environ.setdefault("DEBUG", "1")  # the settings load without a SECRET_KEY
    os.environ["WINK_PROVIDER"] = "offline"
    os.environ.pop("CELERY_BROKER_URL", None)  # runs are inline
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'catalog_size.sqlite3'}"
    import django
    from django.conf import settings

    django.setup()
    settings.DEBUG = False  # connections keep no query log while timing
    # What assembly costs when it has to read the catalog: the frozen revisions
    # cached per catalog generation (ADR 0010) would answer every start after
    # the first from memory, beside 10 sections as beside 10,000.
    from tooling.assembly import catalog

    catalog._FROZEN.size = 0
    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        name = str(Path(tmp) / "catalog_size.sqlite3")
    elif database["ENGINE"].endswith("postgresql"):
        name = f"{database['NAME']}_catalog_size"
    else:
        raise SystemExit("DATABASE_URL must be PostgreSQL (or unset: SQLite).")
    database.setdefault("TEST", {})["NAME"] = name
    from django.db import connection

    return str(connection.vendor)


def add_unrelated(first: int, count: int) -> None:
    """Bulk-create ``count`` sections no demo prompt reaches (numbered from
    ``first``), with tools, hosted tools and policies linked to them and
    prompts that use them."""
    from tooling.models import (
        HostedToolDefinition,
        PolicyDefinition,
        PromptSection,
        PromptTemplate,
        SectionDefinition,
        SectionHostedTool,
        SectionTool,
        ToolDefinition,
    )

    numbers = range(first, first + count)
    sections = SectionDefinition.objects.bulk_create(
        [
            SectionDefinition(
                key=f"unrelated-{n}",
                title=f"Unrelated {n}",
                template="Unrelated work on $subject.",
                default_params={"subject": f"subject {n}"},
                position=n % 5,
            )
            for n in numbers
        ],
        batch_size=500,
    )
    # Every third section is a root; the next two nest under it, three deep.
    for index, section in enumerate(sections):
        if index % 3:
            section.parent_id = sections[index - 1].pk
    SectionDefinition.objects.bulk_update(sections, ["parent"], batch_size=500)
    tools = ToolDefinition.objects.bulk_create(
        [
            ToolDefinition(name=f"unrelated_tool_{n}", handler_key="demo.count_words")
            for n in numbers[::2]
        ],
        batch_size=500,
    )
    SectionTool.objects.bulk_create(
        [
            SectionTool(section=section, tool=tool)
            for section, tool in zip(sections[::2], tools, strict=False)
        ],
        batch_size=500,
    )
    hosted = HostedToolDefinition.objects.bulk_create(
        [
            HostedToolDefinition(
                name=f"unrelated_search_{n}",
                kind=HostedToolDefinition.Kind.WEB_SEARCH,
                description="Search the web.",
            )
            for n in numbers[::10]
        ],
        batch_size=500,
    )
    SectionHostedTool.objects.bulk_create(
        [
            SectionHostedTool(section=section, hosted_tool=tool)
            for section, tool in zip(sections[1::10], hosted, strict=False)
        ],
        batch_size=500,
    )
    policies = PolicyDefinition.objects.bulk_create(
        [
            PolicyDefinition(
                name=f"unrelated-policy-{n}",
                kind=PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
                config={"dependencies": {}},
            )
            for n in numbers[::10]
        ],
        batch_size=500,
    )
    through = SectionDefinition.policies.through
    through.objects.bulk_create(
        [
            through(sectiondefinition_id=section.pk, policydefinition_id=policy.pk)
            for section, policy in zip(sections[2::10], policies, strict=False)
        ],
        batch_size=500,
    )
    prompts = PromptTemplate.objects.bulk_create(
        [PromptTemplate(namespace="unrelated", key=f"p{n}") for n in numbers[::30]],
        batch_size=500,
    )
    PromptSection.objects.bulk_create(
        [
            PromptSection(prompt=prompt, section=section)
            for prompt, section in zip(prompts, sections[::30], strict=False)
        ],
        batch_size=500,
    )


def analyze() -> None:
    """Planner statistics as a settled PostgreSQL database has them."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


class Catalogs:
    """The two databases, each with its own open connection; ``use`` makes
    one of them the default connection (what the services use) without
    reconnecting, so the workflows alternate between them run by run."""

    def __init__(self, small: int, large: int) -> None:
        from django.db import DEFAULT_DB_ALIAS, connections

        from tooling.demo import seed_demo_catalog

        self.sizes = (small, large)
        self.original = connections[DEFAULT_DB_ALIAS]
        self.old_name = str(self.original.settings_dict["NAME"])
        creation = self.original.creation
        creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        seed_demo_catalog()
        add_unrelated(0, small)
        analyze()
        self.original.close()
        creation.clone_test_db(suffix="large", verbosity=0, keepdb=False)
        self.names = {
            small: str(self.original.settings_dict["NAME"]),
            large: str(creation.get_test_db_clone_settings("large")["NAME"]),
        }
        self.wrappers = {}
        for size, name in self.names.items():
            wrapper = connections.create_connection(DEFAULT_DB_ALIAS)
            wrapper.settings_dict = {**wrapper.settings_dict, "NAME": name}
            self.wrappers[size] = wrapper
        self.use(large)
        add_unrelated(small, large - small)
        analyze()

    def use(self, size: int) -> None:
        from django.db import DEFAULT_DB_ALIAS, connections

        connections[DEFAULT_DB_ALIAS] = self.wrappers[size]
        # A connection opened by another thread goes to the same database.
        connections.settings[DEFAULT_DB_ALIAS]["NAME"] = self.names[size]

    def drop(self) -> None:
        from django.db import DEFAULT_DB_ALIAS, connections

        for wrapper in self.wrappers.values():
            wrapper.close()
        connections[DEFAULT_DB_ALIAS] = self.original
        connections.settings[DEFAULT_DB_ALIAS]["NAME"] = self.names[self.sizes[0]]
        creation = self.original.creation
        creation.destroy_test_db(None, verbosity=0, suffix="large")
        creation.destroy_test_db(self.old_name, verbosity=0)


def workflows() -> dict[str, Callable[[], Any]]:
    """Name -> one run of it, against the default connection's database."""
    from sessions_app.models import AgentSession
    from sessions_app.runs import dispatch
    from sessions_app.services import start_session
    from tooling.assembly import CatalogEdit, load_template, prompts_broken_by
    from tooling.models import ToolDefinition
    from tooling.services import preview_prompt

    def preview() -> str:
        return preview_prompt(template=load_template(PROMPT_REF)).revision_hash

    def start_queued() -> str:
        inline, send = dispatch.runs_inline, dispatch.dispatch_run
        dispatch.runs_inline = lambda: False  # a worker's job
        dispatch.dispatch_run = lambda *args, **kwargs: True
        try:
            session = start_session(prompt_ref=PROMPT_REF)
        finally:
            dispatch.runs_inline, dispatch.dispatch_run = inline, send
        assert session.status == AgentSession.Status.QUEUED, session.status
        return str(session.revision_id)

    def start_inline() -> str:
        session = start_session(prompt_ref=PROMPT_REF)
        assert session.status == AgentSession.Status.SUCCEEDED, (
            session.status,
            session.error_message,
        )
        return str(session.revision_id)

    def broken_by() -> list[tuple[str, str]]:
        tool = ToolDefinition.objects.get(name=EDITED_TOOL)
        tool.enabled = False
        return prompts_broken_by(CatalogEdit.saving(tool))

    return {
        "preview_prompt": preview,
        "start_session, queued": start_queued,
        "start_session, inline": start_inline,
        "prompts_broken_by": broken_by,
    }


def queries_of(run: Callable[[], Any]) -> int:
    """The SQL statements one run executes."""
    from django.db import connection

    count = 0

    def counting(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal count
        count += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counting):
        run()
    return count


def measure(
    catalogs: Catalogs, runs: int, warmup: int
) -> tuple[dict[str, dict[int, list[float]]], dict[str, dict[int, int]], set[str]]:
    """Per workflow and catalog size, the milliseconds of each run and the
    statements of one; and the revision hashes of the prompt seen."""
    named = workflows()
    timings: dict[str, dict[int, list[float]]] = {
        name: {size: [] for size in catalogs.sizes} for name in named
    }
    queries: dict[str, dict[int, int]] = {name: {} for name in named}
    revisions: set[str] = set()
    for size in catalogs.sizes:
        catalogs.use(size)
        revisions.add(named["preview_prompt"]())
        for name, run in named.items():
            queries[name][size] = queries_of(run)
    for round_ in range(warmup + runs):
        for name, run in named.items():
            # Alternate which catalog goes first: neither always follows the other.
            order = catalogs.sizes if round_ % 2 else catalogs.sizes[::-1]
            for size in order:
                catalogs.use(size)
                started = time.perf_counter()
                run()
                elapsed = (time.perf_counter() - started) * 1000
                if round_ >= warmup:
                    timings[name][size].append(elapsed)
    return timings, queries, revisions


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", type=int, default=10, help="Unrelated sections.")
    parser.add_argument("--large", type=int, default=10_000, help="Unrelated sections.")
    parser.add_argument("--runs", type=int, default=40, help="Timed runs of each.")
    parser.add_argument("--warmup", type=int, default=5, help="Untimed runs first.")
    parser.add_argument("--json", action="store_true", help="Print JSON results too.")
    args = parser.parse_args()
    if args.large <= args.small:
        parser.error("--large must be more than --small")

    with tempfile.TemporaryDirectory(prefix="wink-catalog-size-") as tmp:
        vendor = configure(tmp)
        loading = time.perf_counter()
        catalogs = Catalogs(args.small, args.large)
        loaded = time.perf_counter() - loading
        try:
            timings, queries, revisions = measure(catalogs, args.runs, args.warmup)
        finally:
            catalogs.drop()
    report(args, vendor, loaded, timings, queries, revisions)


def report(
    args: argparse.Namespace,
    vendor: str,
    loaded: float,
    timings: dict[str, dict[int, list[float]]],
    queries: dict[str, dict[int, int]],
    revisions: set[str],
) -> None:
    small, large = args.small, args.large
    print(
        f"Catalog size: {PROMPT_REF} beside {small:,} and {large:,} unrelated "
        f"sections; {args.runs} runs of each workflow per catalog (after "
        f"{args.warmup} warm-up runs), the catalogs alternating run by run"
    )
    print(
        f"Python {platform.python_version()}, {vendor}, {os.cpu_count()} CPU(s); "
        f"databases loaded in {loaded:.1f} s"
    )
    same = len(revisions) == 1
    print(
        "Revision of the prompt: "
        + ("the same in both catalogs" if same else f"DIFFERS: {sorted(revisions)}")
    )
    print(
        f"{'workflow':<24}{f'{small:,} (ms)':>12}{f'{large:,} (ms)':>14}"
        f"{'ratio':>8}{'target':>10}{'queries':>10}"
    )
    results: dict[str, dict[str, Any]] = {}
    for name, by_size in timings.items():
        ms = {size: statistics.median(values) for size, values in by_size.items()}
        # Each run of the large catalog against its neighbour of the small one.
        ratio = statistics.median(
            big / little
            for big, little in zip(by_size[large], by_size[small], strict=True)
        )
        counts = f"{queries[name][small]}/{queries[name][large]}"
        results[name] = {
            "small_ms": ms[small],
            "large_ms": ms[large],
            "ratio": ratio,
            "queries": [queries[name][small], queries[name][large]],
        }
        print(
            f"{name:<24}{ms[small]:>12.2f}{ms[large]:>14.2f}{ratio:>7.2f}x"
            f"{f'<= {TARGET}x':>10}{counts:>10}"
        )
    worst = max(figures["ratio"] for figures in results.values())
    verdict = "MEETS" if worst <= TARGET and same else "MISSES"
    print(f"Worst ratio {worst:.2f}x: {verdict} the {TARGET}x target.")
    if args.json:
        print(
            json.dumps(
                {
                    "database": vendor,
                    "sections": [small, large],
                    "workflows": results,
                    "same_revision": same,
                    "target": TARGET,
                }
            )
        )


if __name__ == "__main__":
    main()
