# An MCP server built with the official Python SDK (PyPI `mcp` 2.x), for kite's tests.
# usage: python py_server.py [stdio|streamable-http|streamable-http-json] [port]
import json
import sys

import anyio
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


@mcp.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called `name`, then tells the client the tool list changed."""

    def grown() -> str:
        return f"I am {name}"

    mcp.add_tool(grown, name=name, description="A tool added at run time.")
    await ctx.request_context.session.send_tool_list_changed()
    return f"added {name}"


@mcp.tool()
async def ask_many(times: int, max_tokens: int, ctx: Context) -> str:
    """Asks the client's model `times` times (sampling), each for `max_tokens` tokens."""
    from mcp.types import SamplingMessage, TextContent

    answered, refused = [], []
    for i in range(times):
        try:
            result = await ctx.request_context.session.create_message(
                messages=[SamplingMessage(role="user", content=TextContent(type="text", text=f"question {i}"))],
                max_tokens=max_tokens,
            )
            answered.append(result.content.text)
        except Exception as e:  # the client's refusal, as the server sees it
            refused.append(str(e))
    return json.dumps({"answered": answered, "refused": refused})


@mcp.tool()
async def slow(seconds: float, steps: int, ctx: Context) -> str:
    """Takes `seconds`, in `steps` steps; reports progress after each when steps > 1."""
    for i in range(steps):
        await anyio.sleep(seconds / steps)
        if steps > 1:
            await ctx.report_progress(i + 1, steps)
    return "done"


@mcp.tool()
async def wait_for_cancel(marker: str) -> str:
    """Waits to be cancelled, then writes `cancelled` to the file `marker`."""
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        with open(marker, "w") as f:
            f.write("cancelled")
        raise
    return "never cancelled"


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
