"""An MCP server over stdio with one tool, for docs/mcp.md: what an agent's tool server is.

Run by an MCP client (``python examples/orders_server.py``), never by hand: it speaks
JSON-RPC on its stdin and stdout.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

ORDERS = {"A123": "Order A123: shipped on 2026-11-30, 2 items, carrier ParcelCo."}

server = MCPServer("orders")


@server.tool()
def lookup_order(order_id: str) -> str:
    """Look an order up by its id: its status, in one sentence."""
    return ORDERS.get(order_id, f"No order {order_id}.")


if __name__ == "__main__":
    server.run("stdio")
