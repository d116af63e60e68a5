"""An agent managing `evo serve --manage` over MCP with the official Python SDK (`mcp`),
its user answering each confirmation through the elicitation callback.

Usage:
    manage.py URL TOKEN MODE ANSWER REFERENCE DATA

TOKEN is the bearer token sent with every request (`-` for none).
MODE is `auto` (2026-07-28: each question comes back as an input-required result) or
`legacy` (2025-11-25: `elicitation/create` while the call waits). ANSWER is what the user
does with every question: `accept` (ticks "confirm"), `decline`, or `none` (no
elicitation callback: the client cannot be asked).

Installs REFERENCE (a plain component with no manifest), waits for
tools/list_changed, calls its read-file function, grants it DATA (HOST::GUEST:ro) and
calls again, revokes it and calls again, then uninstalls it. Prints one JSON object
with what it saw; the Rust test checks it.
"""

from __future__ import annotations

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result) -> str | None:
    return result.content[0].text if result.content else None


async def main() -> None:
    url, token, mode, answer, reference, data = sys.argv[1:7]
    headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    asked: list[str] = []
    changed = asyncio.Event()

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=answer)

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    client = Client(
        transport,
        mode="legacy" if mode == "legacy" else "auto",
        elicitation_callback=None if answer == "none" else on_elicit,
        message_handler=on_message,
        read_timeout_seconds=60,
    )
    report: dict = {}
    async with client:
        report["protocol"] = client.protocol_version
        tools = await client.list_tools()
        report["tools_before"] = sorted(t.name for t in tools.tools)
        if "evo_list_skills" not in report["tools_before"]:
            direct = await client.call_tool("evo_list_skills", {})
            report["direct"] = {"isError": direct.is_error, "text": text_of(direct)}
            report["asked"] = asked
            print(json.dumps(report, default=str))
            return
        listed = await client.call_tool("evo_list_skills", {})
        report["list_before"] = {"isError": listed.is_error, "text": text_of(listed)}

        async def call(name: str, arguments: dict) -> dict:
            result = await client.call_tool(name, arguments)
            return {"isError": result.is_error, "text": text_of(result)}

        if mode == "auto":
            async with client.listen(tools_list_changed=True) as sub:
                report["install"] = await call("evo_install_skill", {"reference": reference})
                if not report["install"]["isError"]:

                    async def first() -> str:
                        async for event in sub:
                            return type(event).__name__
                        return "closed"

                    report["event"] = await asyncio.wait_for(first(), 30)
        else:
            report["install"] = await call("evo_install_skill", {"reference": reference})
            if not report["install"]["isError"]:
                await asyncio.wait_for(changed.wait(), 30)
                report["event"] = "ToolListChangedNotification"
        tools = await client.list_tools()
        report["tools_after"] = sorted(t.name for t in tools.tools)
        if not report["install"]["isError"]:
            read = {"path": "/data/notes.txt"}
            report["read_before"] = await call("io__read-file", read)
            report["grants_before"] = await call("evo_skill_grants", {"name": "io"})
            report["grant"] = await call("evo_grant", {"name": "io", "dirs": [data]})
            report["read_granted"] = await call("io__read-file", read)
            report["revoke"] = await call("evo_revoke", {"name": "io", "dirs": ["/data"]})
            report["read_revoked"] = await call("io__read-file", read)
            report["outside"] = await call("evo_grant", {"name": "io", "dirs": ["/etc::/data:ro"]})
            report["uninstall"] = await call("evo_uninstall_skill", {"name": "io"})
            tools = await client.list_tools()
            report["tools_end"] = sorted(t.name for t in tools.tools)
        report["asked"] = asked
    print(json.dumps(report, default=str))


asyncio.run(main())
