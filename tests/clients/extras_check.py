"""Run by test_extras_range.py with the python of a venv that holds only the client and one end of its extras'
ranges (no Django, no server code): the MCP server driven in-process by the SDK's own client, and the HTTP
transport's key check, against the live zeromem server named by ZEROMEM_URL / ZEROMEM_API_KEY. Prints a JSON
summary."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
from mcp import Client
from zeromem_client import Zeromem
from zeromem_client.mcp_server import TOOL_NAMES, CallerKeys, build_server, http_server

NOTE = "The range check's note: the deploy runs on Fridays."


async def mcp_round_trip() -> dict[str, Any]:
    with Zeromem() as zeromem:
        async with Client(build_server(lambda: zeromem)) as client:
            tools = sorted(tool.name for tool in (await client.list_tools()).tools)
            stored = await client.call_tool("remember", {"content": NOTE, "user_id": "range"})
            found = await client.call_tool("search_memories", {"query": "when does the deploy run",
                                                                "user_id": "range"})
    keys = CallerKeys(os.environ["ZEROMEM_URL"])
    accepted = await keys.verify_token(os.environ["ZEROMEM_API_KEY"])
    refused = await keys.verify_token("zm_000000000000_wrong")
    await keys.aclose()
    http_server(user_id=None).streamable_http_app()  # the auth wiring this SDK release offers
    return {"tools": tools, "tool_names": sorted(TOOL_NAMES), "stored": stored.structured_content,
            "found": [hit["text"] for hit in (found.structured_content or {}).get("results", [])],
            "key_accepted": accepted is not None, "wrong_key_refused": refused is None}


def main() -> None:
    summary = anyio.run(mcp_round_trip)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
