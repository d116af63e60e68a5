"""A dangerous tool call over MCP, confirmed (or not) by the client's user, with the
official Python SDK (`mcp`) and its elicitation callback.

Usage:
    confirm.py stdio EVO_BIN DATA_DIR PROJECT MODE ANSWER
    confirm.py http URL MODE ANSWER

MODE is `auto` (the current revision, 2026-07-28: the question comes back as an
input-required result and the SDK calls the tool again with the answer) or `legacy`
(the initialize handshake: the server sends `elicitation/create` while the call waits).
ANSWER is what the user does: `accept` (ticks "confirm" and accepts), `untick`
(accepts without ticking), `decline`, `cancel`, or `none` (the client has no
elicitation callback, so it declares no elicitation). `tamper` (MODE `auto` only) plays
a hostile client driving the rounds itself: it sends the user's yes with other
arguments, then with a made-up `requestState`, and finally the honest retry with a no.

Calls `write` on notes.txt, which exists, so it asks before replacing it. Prints one
JSON object with what it saw; the Rust test checks it and the file.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters


ARGUMENTS = {"file_path": "notes.txt", "content": "replaced by the model\n"}
YES = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}


async def tamper(client: Client, report: dict) -> None:
    """A client that reuses a question's answer for another call, or forges one."""
    first = await client.session.call_tool("write", ARGUMENTS, allow_input_required=True)
    report["first"] = type(first).__name__
    state = first.request_state
    report["asked"] = sorted(first.input_requests or {})
    errors = {}
    other = dict(ARGUMENTS, content="something else entirely\n")
    for name, arguments, request_state in [
        ("other-arguments", other, state),
        ("forged-state", ARGUMENTS, "0" * 32),
    ]:
        try:
            await client.session.call_tool(
                "write", arguments, input_responses=YES, request_state=request_state,
                allow_input_required=True,
            )
            errors[name] = None
        except Exception as e:  # the SDK raises the JSON-RPC error
            errors[name] = str(e)
    report["errors"] = errors
    no = {"confirm": types.ElicitResult(action="decline")}
    last = await client.session.call_tool(
        "write", ARGUMENTS, input_responses=no, request_state=state, allow_input_required=True
    )
    report["isError"] = last.is_error
    report["text"] = last.content[0].text if last.content else None


async def main() -> None:
    kind = sys.argv[1]
    if kind == "stdio":
        evo, data_dir, project, mode, answer = sys.argv[2:7]
        server = StdioServerParameters(
            command=evo, args=["serve"], env=dict(os.environ, EVO_HOME=data_dir), cwd=project
        )
    else:
        server, mode, answer = sys.argv[2:5]
    asked: list[dict] = []

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append({"message": params.message, "schema": params.requested_schema})
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        if answer == "untick":
            return types.ElicitResult(action="accept", content={"confirm": False})
        return types.ElicitResult(action=answer)

    client = Client(
        server,
        mode="legacy" if mode == "legacy" else "auto",
        elicitation_callback=None if answer == "none" else on_elicit,
        read_timeout_seconds=30,
    )
    report: dict = {}
    async with client:
        report["protocol"] = client.protocol_version
        if answer == "tamper":
            await tamper(client, report)
            print(json.dumps(report, default=str))
            return
        result = await client.call_tool(
            "write", {"file_path": "notes.txt", "content": "replaced by the model\n"}
        )
        report["isError"] = result.is_error
        report["text"] = result.content[0].text if result.content else None
        report["asked"] = asked
    print(json.dumps(report, default=str))


asyncio.run(main())
