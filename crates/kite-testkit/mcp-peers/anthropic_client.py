"""The official Anthropic Python SDK as a client of a gateway: each check prints one JSON
line.

    python anthropic_client.py BASE_URL KEY
"""

import json
import sys

import anthropic

base, key = sys.argv[1], sys.argv[2]
client = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0, timeout=30)


def say(check, **fields):
    print(json.dumps({"check": check, **fields}), flush=True)


whole = client.messages.create(
    model="claude-haiku-4-5", max_tokens=100, system="Be brief.",
    messages=[{"role": "user", "content": "Say hello."}],
)
say("whole", text=whole.content[0].text, stop=whole.stop_reason, model=whole.model,
    output_tokens=whole.usage.output_tokens)

with client.messages.stream(
    model="claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": "Count."}]
) as stream:
    text = "".join(stream.text_stream)
    final = stream.get_final_message()
say("stream", text=text, stop=final.stop_reason)

tools = [{"name": "add", "description": "Adds.",
          "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]
with client.messages.stream(
    model="claude-haiku-4-5", max_tokens=100, tools=tools,
    messages=[{"role": "user", "content": "19 + 23?"}],
) as stream:
    final = stream.get_final_message()
use = [b for b in final.content if b.type == "tool_use"][0]
say("tool", name=use.name, input=use.input, id=use.id, stop=final.stop_reason)

try:
    anthropic.Anthropic(base_url=base, api_key="wrong-key", max_retries=0).messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "?"}])
    say("bad_key", raised=None)
except anthropic.AuthenticationError as e:
    say("bad_key", raised="AuthenticationError", status=e.status_code)

count = client.messages.count_tokens(
    model="claude-haiku-4-5", system="Be brief.", tools=tools,
    messages=[{"role": "user", "content": "How many tokens is this sentence, all told?"}],
)
say("count", input_tokens=count.input_tokens)

page = client.models.list(limit=1)
say("models", ids=[m.id for m in page.data], has_more=page.has_more,
    display_name=page.data[0].display_name, type=page.data[0].type)
one = client.models.retrieve(page.data[0].id)
say("model", id=one.id, created_at=one.created_at.isoformat())
