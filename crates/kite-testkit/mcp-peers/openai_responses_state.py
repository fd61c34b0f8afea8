"""The official OpenAI Python SDK's stateful Responses API against a fleet of gateways:
each call may reach another replica. Each check prints one JSON line.

    python openai_responses_state.py BASE_URL KEY OTHER_KEY REPLICA_A REPLICA_B
"""

import json
import sys
import time

import openai

base, key, other_key, replica_a, replica_b = sys.argv[1:6]


def client(url, api_key=key):
    return openai.OpenAI(base_url=url, api_key=api_key, max_retries=0, timeout=30)


def say(check, **fields):
    print(json.dumps({"check": check, **fields}), flush=True)


fleet = client(base)
first = fleet.responses.create(model="gpt-5-nano", input="My name is Ada.")
say("first", id=first.id, status=first.status, text=first.output_text)

second = fleet.responses.create(
    model="gpt-5-nano", input="What is my name?", previous_response_id=first.id
)
say("second", id=second.id, status=second.status, text=second.output_text)

# Streamed and kept too, then continued from.
with fleet.responses.stream(
    model="gpt-5-nano", input="And my surname?", previous_response_id=second.id
) as stream:
    for _ in stream:
        pass
    streamed = stream.get_final_response()
third = fleet.responses.create(
    model="gpt-5-nano", input="Thanks.", previous_response_id=streamed.id
)
say("streamed", id=streamed.id, status=streamed.status, next_status=third.status)

got = client(replica_b).responses.retrieve(first.id)
say("retrieved", id=got.id, status=got.status, text=got.output_text)

items = fleet.responses.input_items.list(third.id, order="asc")
texts = []
for item in items.data:
    for part in getattr(item, "content", None) or []:
        texts.append(getattr(part, "text", ""))
say("items", count=len(items.data), texts=texts)

for name, call in [
    ("other_retrieve", lambda: client(base, other_key).responses.retrieve(first.id)),
    ("other_continue", lambda: client(base, other_key).responses.create(
        model="gpt-5-nano", input="Who am I?", previous_response_id=first.id)),
    ("other_delete", lambda: client(base, other_key).responses.delete(first.id)),
]:
    try:
        call()
        say(name, status=200)
    except openai.NotFoundError as e:
        say(name, status=e.status_code)

queued = client(replica_a).responses.create(
    model="gpt-5-nano", input="Take your time.", background=True
)
polled = client(replica_b).responses.retrieve(queued.id)
deadline = time.time() + 20
while polled.status in ("queued", "in_progress") and time.time() < deadline:
    time.sleep(0.2)
    polled = client(replica_b).responses.retrieve(queued.id)
say("background", first_status=queued.status, status=polled.status, text=polled.output_text)

fleet.responses.delete(first.id)
try:
    fleet.responses.retrieve(first.id)
    say("deleted", status=200)
except openai.NotFoundError as e:
    say("deleted", status=e.status_code)
