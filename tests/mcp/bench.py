"""tools/call round trips with the official Python MCP SDK, for the `serve` bench.

Usage: bench.py CALLS TOOL ARGUMENTS_JSON COMMAND [ARG ...]

Starts COMMAND as an MCP server over stdio, checks one call, then times CALLS
sequential calls of TOOL and prints {"p50_us": …, "p99_us": …, "calls": …}.
"""

import asyncio
import json
import os
import statistics
import sys
import time

from mcp import Client, StdioServerParameters


async def main() -> None:
    calls, tool, arguments = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    server = StdioServerParameters(command=sys.argv[4], args=sys.argv[5:], env=dict(os.environ))
    async with Client(server, cache=None) as client:
        first = await client.call_tool(tool, arguments)
        if first.is_error:
            raise SystemExit(f"the check call failed: {first.content}")
        times = []
        for _ in range(calls):
            start = time.perf_counter_ns()
            result = await client.call_tool(tool, arguments)
            times.append((time.perf_counter_ns() - start) / 1000)
            if result.is_error:
                raise SystemExit(f"a call failed: {result.content}")
    times.sort()
    print(json.dumps({
        "calls": calls,
        "p50_us": statistics.median(times),
        "p99_us": times[int(len(times) * 0.99) - 1],
    }))


asyncio.run(main())
