"""An MCP server over stdio for the MCP road's tests: an order-lookup tool, as agents use.

The tests launch it with ``sys.executable`` through the real clients (``mcp``'s
``stdio_client``, pydantic-ai's and openai-agents' stdio toolsets). Each start appends the
process id to the file ``ORDERS_SERVER_STARTS`` names, so a test counts the processes started
(a replay must start none). During a call the tool logs a line and reports progress: server
notifications a replay must deliver in order. A second tool asks the client's model for a
summary: a server-initiated sampling request, which the client answers. With ``--http PORT``
it serves MCP over streamable HTTP on loopback instead, with ``--sse PORT`` over the SSE
transport (the HTTP tests start it, and stop it by its pid).
"""

from __future__ import annotations

import os
import sys
import warnings

import mcp.types as types

MCP_1 = False
try:  # mcp 2.x
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.shared.exceptions import MCPDeprecationWarning

    # Logging to the client is deprecated in the newest MCP, yet servers still do it: a test
    # needs both kinds of notification, without the warning on every call.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # mcp 1.x (the oldest lane): the same server under its 1.x names
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer

    MCP_1 = True

ORDERS = {
    "A123": "Order A123: shipped on 2026-11-30, 2 items, carrier ParcelCo.",
    "B456": "Order B456: refunded on 2026-11-28.",
}

server = MCPServer("orders")


@server.tool()
async def lookup_order(order_id: str, ctx: Context) -> str:
    """Look an order up by its id: its status, in one sentence."""
    await ctx.info(f"looking up {order_id}")
    await ctx.report_progress(1, 1, "found")
    return ORDERS.get(order_id, f"No order {order_id}.")


@server.tool()
def account() -> str:
    """Which account the server uses (a server may echo its own token back)."""
    return f"account token {os.environ.get('ORDERS_API_TOKEN', '')}"


@server.tool()
async def summarize_order(order_id: str, ctx: Context) -> str:
    """Summarize an order in the client's words: the server asks the client's model (sampling)."""
    asked = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=ORDERS.get(order_id, order_id))
    )
    answer = await ctx.session.create_message(
        [asked], max_tokens=50, related_request_id=ctx.request_id
    )
    return f"summary: {getattr(answer.content, 'text', '')}"


if __name__ == "__main__":
    starts = os.environ.get("ORDERS_SERVER_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as file:
            file.write(f"{os.getpid()}\n")
    if len(sys.argv) > 2 and sys.argv[1] in ("--http", "--sse"):  # HTTP on a loopback port
        transport = "streamable-http" if sys.argv[1] == "--http" else "sse"
        host, port = "127.0.0.1", int(sys.argv[2])
        if MCP_1:  # 1.x takes the address from its settings
            server.settings.host, server.settings.port = host, port
            server.run(transport)  # type: ignore[arg-type]
        else:
            server.run(transport, host=host, port=port)  # type: ignore[arg-type]
    else:
        server.run("stdio")
