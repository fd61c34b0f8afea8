# An MCP server built with the official Python SDK (PyPI `mcp` 2.x), for kite's tests.
# usage: python py_server.py [stdio|streamable-http] [port]
import sys
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("kite-py-test")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def echo(message: str) -> str:
    """Echo a message back."""
    return f"Echo: {message}"


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        mcp.run()
    else:
        mcp.run(transport, host="127.0.0.1", port=int(sys.argv[2]))
