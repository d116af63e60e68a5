"""A client that answers Evo's confirmation requests (MCP elicitation).

Usage:
    confirm.py EVO_BIN DATA_DIR PROJECT_DIR

Starts `evo serve` in PROJECT_DIR over stdio (the legacy handshake, which allows
server-to-client requests), calls `write` over an existing file (the user accepts)
and `bash` with `rm -rf src` (the user declines), and prints one JSON object with
what it was asked and what the calls returned.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters


async def main() -> None:
    evo, data_dir, project = sys.argv[1:4]
    asked: list[dict] = []

    async def on_elicit(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    server = StdioServerParameters(
        command=evo, args=["serve"], env=dict(os.environ, EVO_HOME=data_dir), cwd=project
    )
    client = Client(server, mode="legacy", elicitation_callback=on_elicit, read_timeout_seconds=30)
    report: dict = {}
    async with client:
        write = await client.call_tool("write", {"file_path": "src/lib.rs", "content": "// replaced\n"})
        report["write"] = {"isError": write.is_error, "structured": write.structured_content}
        rm = await client.call_tool("bash", {"command": "rm -rf src"})
        report["rm"] = {"isError": rm.is_error, "text": rm.content[0].text if rm.content else None}
    report["asked"] = asked
    print(json.dumps(report, default=str))


asyncio.run(main())
