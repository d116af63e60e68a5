"""An MCP client session against `evo serve`, with the official Python SDK (`mcp`).

Usage:
    client.py stdio EVO_BIN DATA_DIR SKILL_TO_INSTALL MODE
    client.py http URL DATA_DIR SKILL_TO_INSTALL MODE EVO_BIN

MODE is `auto` (the current revision, 2026-07-28: change events over
subscriptions/listen) or `legacy` (the initialize handshake: change notifications on
the session). Prints one JSON object with what it saw; the Rust test checks it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters


def install(evo: str, data_dir: str, skill: str) -> None:
    env = dict(os.environ, EVO_HOME=data_dir)
    done = subprocess.run(
        [evo, "skill", "install", skill], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"evo skill install failed: {done.stderr}")


async def session(client: Client, report: dict, evo: str, data_dir: str, skill: str, mode: str,
                  changed: asyncio.Event) -> None:
    report["protocol"] = client.protocol_version
    tools = await client.list_tools()
    by_name = {t.name: t for t in tools.tools}
    calc = by_name["calculate"]
    report["calculate_tool"] = {
        "outputSchema": calc.output_schema,
        "readOnly": calc.annotations.read_only_hint if calc.annotations else None,
    }
    ok = await client.call_tool("calculate", {"expression": "sqrt(144) + 10"})
    report["ok"] = {"isError": ok.is_error, "structured": ok.structured_content}
    bad = await client.call_tool("calculate", {"expression": 7})
    report["bad"] = {
        "isError": bad.is_error,
        "text": bad.content[0].text if bad.content else None,
    }
    resources = await client.list_resources()
    uris = [r.uri for r in resources.resources]
    report["resources"] = uris
    guide = next(r for r in resources.resources if str(r.uri).endswith("/SKILL.md"))
    report["resource_meta"] = {"mimeType": guide.mime_type, "size": guide.size}
    read = await client.read_resource(str(guide.uri))
    report["resource_text"] = read.contents[0].text
    prompts = await client.list_prompts()
    report["prompts"] = [p.name for p in prompts.prompts]

    if mode == "auto":
        async with client.listen(tools_list_changed=True, resources_list_changed=True) as sub:
            await asyncio.to_thread(install, evo, data_dir, skill)

            async def first() -> str:
                async for event in sub:
                    return type(event).__name__
                return "closed"

            report["event"] = await asyncio.wait_for(first(), 20)
    else:
        await asyncio.to_thread(install, evo, data_dir, skill)
        await asyncio.wait_for(changed.wait(), 20)
        report["event"] = "ToolListChangedNotification"
    after = await client.list_tools()
    report["tools_after"] = sorted(t.name for t in after.tools)


async def main() -> None:
    kind = sys.argv[1]
    report: dict = {}
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    if kind == "stdio":
        evo, data_dir, skill, mode = sys.argv[2:6]
        server = StdioServerParameters(
            command=evo, args=["serve"], env=dict(os.environ, EVO_HOME=data_dir)
        )
    else:
        server, data_dir, skill, mode, evo = sys.argv[2:7]
    client = Client(
        server,
        mode="legacy" if mode == "legacy" else "auto",
        message_handler=on_message,
        read_timeout_seconds=30,
    )
    async with client:
        await session(client, report, evo, data_dir, skill, mode, changed)
    print(json.dumps(report, default=str))


asyncio.run(main())
