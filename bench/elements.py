"""The messages one control change sends: what a page costs Streamlit, element by element.

    python -m bench.elements self             # the scenario's page on a server of its own
    python -m bench.elements self elements    # two scenarios, and whether their elements are the same kinds

Each line is one message of the rerun that moving the scenario's control starts (the simulated student of the load
benchmark): an element with its kind, size and text, a layout block, or a session message. The elements floor page
(`bench/elements_page.py`) must send the same kinds as the self-attention page; `bench/tests/test_elements_page.py`
checks it.
"""

from __future__ import annotations

import argparse
import asyncio
import random

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.scenarios import SCENARIOS, Scenario, start_server
from testkit.wire import SimulatedUser


def kind(msg: ForwardMsg) -> str:
    """The message's kind: `element <type>`, `block <type>`, or the session message's name."""
    name = msg.WhichOneof("type")
    if name != "delta":
        return name or "?"
    delta = msg.delta.WhichOneof("type")
    if delta == "new_element":
        return f"element {msg.delta.new_element.WhichOneof('type')}"
    if delta == "add_block":
        return f"block {msg.delta.add_block.WhichOneof('type')}"
    return f"delta {delta}"


def describe(msg: ForwardMsg) -> str:
    """One line: the kind, the bytes, and the element's text or label."""
    text = ""
    if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        inner = getattr(element, element.WhichOneof("type") or "", None)
        text = str(getattr(inner, "body", "") or getattr(inner, "label", "")).replace("\n", " ")
    line = f"{kind(msg):32s} {msg.ByteSize():7d} B"
    return f"{line}  {text[:60]!r}" if text else line


async def control_change(url: str, scenario: Scenario) -> list[ForwardMsg]:
    """The messages of one change of the scenario's control, after the page's first run."""
    user = SimulatedUser(url, scenario.page, scenario.query, scenario.control, random.Random(0))
    user.keep_messages = True
    try:
        await user.open()
        await user.change()
        return list(user.messages)
    finally:
        await user.close()


def messages_of(scenario: Scenario) -> list[ForwardMsg]:
    """Serve the scenario's page and return the messages of one control change."""
    with start_server(scenario) as server:
        return asyncio.run(control_change(server.url, scenario))


def kinds(messages: list[ForwardMsg]) -> list[str]:
    """The kinds of the messages, in order: what Streamlit builds and sends for the rerun."""
    return [kind(msg) for msg in messages]


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="+", choices=sorted(SCENARIOS))
    args = parser.parse_args()
    listed = {}
    for name in args.scenarios:
        messages = messages_of(SCENARIOS[name])
        listed[name] = kinds(messages)
        print(f"{name}: {len(messages)} messages")
        for index, msg in enumerate(messages, start=1):
            print(f"  {index:3d}  {describe(msg)}")
    if len(listed) > 1:
        first, *others = listed
        for other in others:
            same = listed[first] == listed[other]
            print(f"{first} and {other}: {'the same' if same else 'different'} message kinds")


if __name__ == "__main__":
    main()
