"""Agent-loop overhead: the floor, a minimal SDK loop and the product's adapter.

One conversation = 6 POSTs to /v1/responses on the offline provider served
over loopback HTTP: 5 turns of two parallel function calls, then an answer.
Each client plays it ``--conversations`` times per round; the median round
is reported. No database is involved. Run with ``make bench``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import openai

from tooling.offline import OfflineServer, ScriptedModel, parallel_calls_script
from tooling.runtime import (
    InMemorySession,
    MarkdownSection,
    NullSink,
    OpenAIAdapter,
    Prompt,
    Tool,
    ToolContext,
    ToolResult,
)

TURNS = 5
CALLS_PER_TURN = 2
POSTS = TURNS + 1
MODEL = "gpt-5.4"
SYSTEM = "You are a benchmark. Call echo as asked, then answer."


@dataclasses.dataclass(frozen=True, slots=True)
class EchoParams:
    text: str = dataclasses.field(metadata={"description": "Text to echo back."})


@dataclasses.dataclass(frozen=True, slots=True)
class Echo:
    text: str


def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[Echo]:
    return ToolResult.ok(Echo(params.text), message="ok")


ECHO_TOOL = Tool(name="echo", description="Echo the given text.", handler=echo)
TOOLS_JSON: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "echo",
        "description": "Echo the given text.",
        "parameters": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "Text to echo back."}
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]


def floor_httpx(base_url: str) -> Callable[[], int]:
    """Plain httpx posting the JSON bodies: the cost of HTTP and JSON alone."""
    client = httpx.Client(base_url=base_url, headers={"Authorization": "Bearer sk-x"})

    def conversation() -> int:
        history: list[Any] = [{"role": "system", "content": SYSTEM}]
        posts = 0
        while True:
            body = {"model": MODEL, "input": history, "tools": TOOLS_JSON}
            response = client.post("/responses", content=json.dumps(body)).json()
            posts += 1
            calls = [i for i in response["output"] if i["type"] == "function_call"]
            history.extend(response["output"])
            if not calls:
                return posts
            for call in calls:
                text = json.loads(call["arguments"])["text"]
                history.append(
                    {
                        "type": "function_call_output",
                        "call_id": call["call_id"],
                        "output": text,
                    }
                )

    return conversation


def sdk_loop(base_url: str) -> Callable[[], int]:
    """The official SDK, minimal loop: typed params on every request."""
    client = openai.OpenAI(api_key="sk-x", base_url=base_url, max_retries=0)

    def conversation() -> int:
        history: list[Any] = [{"role": "system", "content": SYSTEM}]
        posts = 0
        while True:
            response = client.responses.create(
                model=MODEL,
                input=history,
                tools=TOOLS_JSON,  # type: ignore[arg-type]
            )
            posts += 1
            calls = [i for i in response.output if i.type == "function_call"]
            history.extend(item.to_dict() for item in response.output)
            if not calls:
                return posts
            for call in calls:
                text = json.loads(call.arguments)["text"]
                history.append(
                    {
                        "type": "function_call_output",
                        "call_id": call.call_id,
                        "output": text,
                    }
                )

    return conversation


def adapter_loop(base_url: str) -> Callable[[], int]:
    """The product's adapter: executor, policies, events (to a null sink)."""
    client = openai.OpenAI(api_key="sk-x", base_url=base_url, max_retries=0)
    adapter = OpenAIAdapter(client=client, model=MODEL)
    prompt = Prompt(
        ns="bench",
        key="loop",
        sections=[
            MarkdownSection(
                title="Bench", key="bench", template=SYSTEM, tools=[ECHO_TOOL]
            )
        ],
    )
    rendered = prompt.render()
    sink = NullSink()

    def conversation() -> int:
        response = adapter.evaluate(
            prompt, rendered=rendered, session=InMemorySession(), sink=sink
        )
        return response.turns

    return conversation


def measure(run: Callable[[], int], conversations: int, rounds: int) -> float:
    """Median milliseconds per conversation over ``rounds`` rounds."""
    assert run() == POSTS, "the conversation must take exactly 6 POSTs"
    for _ in range(max(5, conversations // 10)):
        run()
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(conversations):
            run()
        timings.append((time.perf_counter() - started) * 1000 / conversations)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="Print JSON results too.")
    args = parser.parse_args()
    model = ScriptedModel(script=parallel_calls_script(TURNS, CALLS_PER_TURN, "echo"))
    with OfflineServer(model) as server:
        base_url = server.base_url
        results = {
            "httpx (floor)": measure(
                floor_httpx(base_url), args.conversations, args.rounds
            ),
            "openai SDK, minimal loop": measure(
                sdk_loop(base_url), args.conversations, args.rounds
            ),
            "WINK OpenAIAdapter": measure(
                adapter_loop(base_url), args.conversations, args.rounds
            ),
        }
    floor = results["httpx (floor)"]
    print(
        f"Agent loop: {TURNS} turns x {CALLS_PER_TURN} parallel calls + answer = "
        f"{POSTS} POSTs/conversation; {args.conversations} conversations x "
        f"{args.rounds} rounds (median)"
    )
    print(
        f"Python {platform.python_version()}, openai {openai.__version__}, "
        f"{os.cpu_count()} CPU(s)"
    )
    print(f"{'client':<28}{'ms/conversation':>17}{'ms/turn over floor':>21}")
    for name, value in results.items():
        extra = (value - floor) / POSTS
        print(f"{name:<28}{value:>17.2f}{extra:>21.2f}")
    adapter_extra = (results["WINK OpenAIAdapter"] - floor) / POSTS
    target = 1.5
    verdict = "meets" if adapter_extra < target else "MISSES"
    print(
        f"Adapter overhead {adapter_extra:.2f} ms/turn: "
        f"{verdict} the {target} ms target."
    )
    if args.json:
        print(
            json.dumps(
                {"ms_per_conversation": results, "adapter_ms_per_turn": adapter_extra}
            )
        )


if __name__ == "__main__":
    main()
