"""The official OpenAI Python SDK as a client of a gateway: each check prints one JSON line.

    python openai_client.py BASE_URL KEY
"""

import json
import sys

import openai

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=30)


def say(check, **fields):
    print(json.dumps({"check": check, **fields}), flush=True)


if sys.argv[3:] == ["rate"]:
    # Three questions in a row: the third is over a two-a-minute limit.
    for n in range(3):
        try:
            client.chat.completions.create(model="gpt-5-nano", messages=[{"role": "user", "content": "Hi"}])
            say("rate", n=n, raised=None)
        except openai.RateLimitError as e:
            say("rate", n=n, raised="RateLimitError", status=e.status_code,
                retry_after=e.response.headers.get("retry-after"))
    sys.exit(0)


whole = client.chat.completions.create(
    model="gpt-5-nano", messages=[{"role": "user", "content": "Say hello."}]
)
say("whole", text=whole.choices[0].message.content, finish=whole.choices[0].finish_reason,
    model=whole.model, prompt_tokens=whole.usage.prompt_tokens)

chunks = client.chat.completions.create(
    model="gpt-5-nano",
    messages=[{"role": "user", "content": "Count."}],
    stream=True,
    stream_options={"include_usage": True},
)
text, finish, usage = "", None, None
for c in chunks:
    if c.choices:
        text += c.choices[0].delta.content or ""
        finish = c.choices[0].finish_reason or finish
    if c.usage:
        usage = c.usage.total_tokens
say("stream", text=text, finish=finish, usage=usage)

tools = [{"type": "function", "function": {"name": "add", "description": "Adds.",
          "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}]
called = client.chat.completions.create(
    model="gpt-5-nano", messages=[{"role": "user", "content": "19 + 23?"}], tools=tools,
    tool_choice="auto",
)
call = called.choices[0].message.tool_calls[0]
say("tool", name=call.function.name, arguments=json.loads(call.function.arguments),
    finish=called.choices[0].finish_reason, id=call.id)

shaped = client.chat.completions.create(
    model="gpt-5-nano", messages=[{"role": "user", "content": "A city, as JSON."}],
    response_format={"type": "json_schema", "json_schema": {"name": "city", "strict": True,
        "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                   "additionalProperties": False}}},
)
say("structured", parsed=json.loads(shaped.choices[0].message.content))

say("models", ids=[m.id for m in client.models.list().data])

try:
    client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "?"}])
    say("not_found", raised=None)
except openai.NotFoundError as e:
    say("not_found", raised="NotFoundError", status=e.status_code)

try:
    openai.OpenAI(base_url=base, api_key="wrong-key", max_retries=0).models.list()
    say("bad_key", raised=None)
except openai.AuthenticationError as e:
    say("bad_key", raised="AuthenticationError", status=e.status_code)
