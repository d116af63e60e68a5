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
elicitation callback, so it declares no elicitation).

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
        result = await client.call_tool(
            "write", {"file_path": "notes.txt", "content": "replaced by the model\n"}
        )
        report["isError"] = result.is_error
        report["text"] = result.content[0].text if result.content else None
        report["asked"] = asked
    print(json.dumps(report, default=str))


asyncio.run(main())
