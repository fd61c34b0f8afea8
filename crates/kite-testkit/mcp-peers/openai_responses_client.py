"""The official OpenAI Python SDK's Responses API as a client of a gateway: each check prints
one JSON line.

    python openai_responses_client.py BASE_URL KEY
"""

import json
import sys

import openai
import pydantic

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=30)


def say(check, **fields):
    print(json.dumps({"check": check, **fields}), flush=True)


whole = client.responses.create(model="gpt-5-nano", input="Say hello.")
say("whole", text=whole.output_text, status=whole.status, model=whole.model,
    input_tokens=whole.usage.input_tokens)

deltas = []
with client.responses.stream(model="gpt-5-nano", input="Count.") as stream:
    for event in stream:
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
    final = stream.get_final_response()
say("stream", deltas=len(deltas), text="".join(deltas), final=final.output_text,
    status=final.status)

tool = client.responses.create(
    model="gpt-5-nano",
    input=[{"role": "user", "content": "What is 19 + 23?"}],
    tools=[{
        "type": "function",
        "name": "add",
        "description": "Adds two numbers",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "strict": True,
    }],
)
call = tool.output[0]
say("tool", type=call.type, name=call.name, arguments=json.loads(call.arguments),
    call_id=call.call_id)


class City(pydantic.BaseModel):
    city: str


parsed = client.responses.parse(model="gpt-5-nano", input="Where is the Louvre?", text_format=City)
say("structured", parsed=parsed.output_parsed.model_dump())

try:
    client.responses.create(model="gpt-5-nano", input="Go on.", previous_response_id="resp_1")
    say("stored", raised=None)
except openai.APIStatusError as e:
    say("stored", raised=type(e).__name__, status=e.status_code, message=e.message)
