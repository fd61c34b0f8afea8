# An MCP server built with the official Python SDK (PyPI `mcp` 2.x), for kite's tests.
# usage: python py_server.py [stdio|streamable-http|streamable-http-json] [port]
import sys
from mcp.server.mcpserver import Context, MCPServer

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


@mcp.tool()
def headers(ctx: Context) -> dict:
    """The HTTP headers this call came with (x-team, authorization)."""
    request = ctx.request_context.request
    seen = request.headers if request is not None else {}
    return {k: seen.get(k) for k in ("x-team", "authorization")}


@mcp.resource("test://greeting")
def greeting() -> str:
    """A greeting."""
    return "hello resource"


@mcp.prompt()
def ask(topic: str) -> str:
    """Ask about a topic."""
    return f"Tell me about {topic}"


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
    if transport == "stdio":
        mcp.run()
    elif transport == "streamable-http-json":
        # Stateless, plain application/json replies, no Mcp-Session-Id.
        mcp.run("streamable-http", host="127.0.0.1", port=port, json_response=True, stateless_http=True)
    else:
        mcp.run(transport, host="127.0.0.1", port=port)
