#!/usr/bin/env python3
"""Scripted loopback model provider used to capture real coding-agent requests.

Speaks just enough of the Anthropic Messages API and the OpenAI Responses API
for Claude Code and Codex CLI to complete a one-tool round trip:

  * a request whose latest user turn asks for hello.txt (and offers a suitable
    tool) is answered with a tool call that writes `hi from kite` to hello.txt;
  * a request whose latest input is a tool result is answered with text "done";
  * anything else (side requests: titles, quota probes, ...) gets short text.

Every request is appended as one JSON line (method, path, headers with secret
values redacted, parsed body) to the log file.

Usage: python3 fake.py PORT LOGFILE
Stdlib only.
"""
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FILE_NAME = "hello.txt"
FILE_TEXT = "hi from kite"
SECRET_HEADERS = {"authorization", "x-api-key", "cookie", "proxy-authorization",
                  "openai-api-key", "anthropic-api-key", "chatgpt-account-id"}

# Emit a thinking block (Anthropic) / reasoning item (OpenAI) before tool calls, so
# the follow-up request shows how the client echoes them back.
REASONING = os.environ.get("FAKE_REASONING", "1") == "1"

# Probe knobs (to find what clients insist on): FAKE_DROP=comma-separated SSE
# event names to leave out; FAKE_STRIP=comma-separated top-level event fields
# to delete (e.g. sequence_number).
DROP = set(filter(None, os.environ.get("FAKE_DROP", "").split(",")))
STRIP = set(filter(None, os.environ.get("FAKE_STRIP", "").split(",")))

LOCK = threading.Lock()
LOG_PATH = None


def log(entry):
    with LOCK:
        with open(LOG_PATH, "a") as f:
            f.write(json.dumps(entry) + "\n")


def new_id(prefix):
    return prefix + uuid.uuid4().hex[:24]


# ---------------------------------------------------------------- Anthropic --

def anth_last_user_blocks(body):
    msgs = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not msgs:
        return []
    c = msgs[-1].get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return c or []


def anth_plan(body):
    """Return ("tool", tool_name, input) or ("text", text)."""
    last = anth_last_user_blocks(body)
    if any(b.get("type") == "tool_result" for b in last):
        return ("text", "done")
    text = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
    tools = {t.get("name"): t for t in body.get("tools", []) or []}
    if FILE_NAME in text and "Write" in tools:
        # Claude Code's Write tool: {"file_path": absolute path, "content": str}
        props = tools["Write"].get("input_schema", {}).get("properties", {})
        cwd = CLAUDE_CWD
        path = f"{cwd}/{FILE_NAME}" if cwd else FILE_NAME
        inp = {}
        for k in props:
            if "path" in k:
                inp[k] = path
            elif k == "content":
                inp[k] = FILE_TEXT
        return ("tool", "Write", inp)
    return ("text", "ok")


CLAUDE_CWD = None  # set from the system prompt ("Primary working directory: ...")


def find_cwd(body):
    sys_ = body.get("system")
    texts = []
    if isinstance(sys_, str):
        texts.append(sys_)
    elif isinstance(sys_, list):
        texts += [b.get("text", "") for b in sys_]
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, list):
            texts += [b.get("text", "") for b in c if isinstance(b, dict)]
    for t in texts:
        for line in t.splitlines():
            for marker in ("Primary working directory:", "Working directory:"):
                if marker in line:
                    return line.split(marker, 1)[1].strip().strip("`")
    return None


def anth_usage(inp=10, out=5):
    return {"input_tokens": inp, "output_tokens": out,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def anth_message(body, plan):
    mid = new_id("msg_")
    if plan[0] == "tool":
        content = [{"type": "tool_use", "id": new_id("toolu_"), "name": plan[1],
                    "input": plan[2]}]
        if REASONING:
            # display "omitted" => empty thinking text, signature only
            disp = (body.get("thinking") or {}).get("display")
            content.insert(0, {"type": "thinking",
                               "thinking": "" if disp == "omitted" else "Need to write the file.",
                               "signature": "ZmFrZS1zaWduYXR1cmUta2l0ZQ=="})
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": plan[1]}]
        stop = "end_turn"
    return {"id": mid, "type": "message", "role": "assistant",
            "model": body.get("model", "fake"), "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": anth_usage()}


def anth_sse(body, plan):
    msg = anth_message(body, plan)
    start = dict(msg, content=[], stop_reason=None, usage=anth_usage(10, 1))
    ev = [("message_start", {"type": "message_start", "message": start}),
          ("ping", {"type": "ping"})]
    for i, blk in enumerate(msg["content"]):
        if blk["type"] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                       "content_block": {"type": "text", "text": ""}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                       "delta": {"type": "text_delta", "text": blk["text"]}}))
        elif blk["type"] == "thinking":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                       "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            if blk["thinking"]:
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                           "delta": {"type": "thinking_delta", "thinking": blk["thinking"]}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                       "delta": {"type": "signature_delta", "signature": blk["signature"]}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                       "content_block": {"type": "tool_use", "id": blk["id"],
                                         "name": blk["name"], "input": {}}}))
            js = json.dumps(blk["input"])
            half = len(js) // 2
            for part in (js[:half], js[half:]):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": part}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta",
               "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
               "usage": {"output_tokens": 5}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


# ------------------------------------------------------------------- OpenAI --

def oai_plan(body):
    """Return ("call", item_without_ids) or ("text", text)."""
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    last = items[-1] if items else {}
    if last.get("type") in ("function_call_output", "custom_tool_call_output",
                            "local_shell_call_output"):
        return ("text", "done")
    # latest user message text
    text = ""
    for it in reversed(items):
        if it.get("type", "message") == "message" and it.get("role") == "user":
            c = it.get("content")
            text = c if isinstance(c, str) else " ".join(
                p.get("text", "") for p in c or [] if isinstance(p, dict))
            break
    if FILE_NAME not in text:
        return ("text", "ok")
    cmd = f"printf '%s' '{FILE_TEXT}' > {FILE_NAME}"
    tools = list(body.get("tools", []) or [])
    # Codex with a known GPT model name sends its tools as an `additional_tools`
    # input item of `namespace` tools instead of the top-level `tools` array.
    for it in items:
        if it.get("type") == "additional_tools":
            tools += it.get("tools", []) or []
    flat = []  # (namespace or None, tool)
    for t in tools:
        if t.get("type") == "namespace":
            flat += [(t.get("name"), sub) for sub in t.get("tools", []) or []]
        else:
            flat.append((None, t))
    by_name = {}
    for ns, t in flat:
        if t.get("type") == "function" and ns is None:
            by_name[t.get("name")] = t
    # Prefer a shell-ish function tool; inspect its schema for the arg name.
    for name in ("exec_command", "shell_command", "shell"):
        t = by_name.get(name)
        if not t:
            continue
        props = (t.get("parameters") or {}).get("properties", {})
        if "cmd" in props:
            args = {"cmd": cmd}
        elif props.get("command", {}).get("type") == "array":
            args = {"command": ["bash", "-lc", cmd]}
        else:
            args = {"command": cmd}
        return ("call", {"type": "function_call", "name": name,
                         "arguments": json.dumps(args)})
    for ns, t in flat:
        if t.get("type") == "custom" and t.get("name") == "exec":
            # Codex "code mode": freeform JavaScript that calls nested tools.
            js = ("const r = await tools.exec_command({cmd: %s});\n"
                  "text(r.output ?? '');\n" % json.dumps(cmd))
            item = {"type": "custom_tool_call", "name": "exec", "input": js}
            if ns and ns != "functions" and NAMESPACE_ON_CALLS:
                item["namespace"] = ns
            return ("call", item)
    for ns, t in flat:
        if t.get("type") == "custom" and t.get("name") == "apply_patch":
            patch = ("*** Begin Patch\n*** Add File: hello.txt\n+" + FILE_TEXT +
                     "\n*** End Patch\n")
            return ("call", {"type": "custom_tool_call", "name": "apply_patch",
                             "input": patch})
    return ("text", "no usable tool")


NAMESPACE_ON_CALLS = True


class Seq:
    def __init__(self):
        self.n = 0

    def __call__(self, d):
        d["sequence_number"] = self.n
        self.n += 1
        return d


def oai_response_obj(body, rid, status, output, usage=None):
    return {"id": rid, "object": "response", "created_at": int(time.time()),
            "status": status, "error": None, "incomplete_details": None,
            "model": body.get("model", "fake"), "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": [], "usage": usage}


def oai_sse(body, plan):
    rid = new_id("resp_")
    s = Seq()
    ev = []
    ev.append(("response.created", s({"type": "response.created",
               "response": oai_response_obj(body, rid, "in_progress", [])})))
    ev.append(("response.in_progress", s({"type": "response.in_progress",
               "response": oai_response_obj(body, rid, "in_progress", [])})))
    out_idx = 0
    items_done = []
    if plan[0] == "text":
        iid = new_id("msg_")
        text = plan[1]
        item0 = {"id": iid, "type": "message", "status": "in_progress",
                 "role": "assistant", "content": []}
        part = {"type": "output_text", "text": text, "annotations": []}
        item = dict(item0, status="completed", content=[part])
        ev.append(("response.output_item.added", s({"type": "response.output_item.added",
                   "output_index": 0, "item": item0})))
        ev.append(("response.content_part.added", s({"type": "response.content_part.added",
                   "item_id": iid, "output_index": 0, "content_index": 0,
                   "part": {"type": "output_text", "text": "", "annotations": []}})))
        ev.append(("response.output_text.delta", s({"type": "response.output_text.delta",
                   "item_id": iid, "output_index": 0, "content_index": 0,
                   "delta": text})))
        ev.append(("response.output_text.done", s({"type": "response.output_text.done",
                   "item_id": iid, "output_index": 0, "content_index": 0,
                   "text": text})))
        ev.append(("response.content_part.done", s({"type": "response.content_part.done",
                   "item_id": iid, "output_index": 0, "content_index": 0,
                   "part": part})))
    else:
        if REASONING:
            rid_ = new_id("rs_")
            summ = "Writing the file."
            r0 = {"id": rid_, "type": "reasoning", "summary": []}
            rfull = {"id": rid_, "type": "reasoning",
                     "summary": [{"type": "summary_text", "text": summ}],
                     "encrypted_content": "gAAAAA-fake-encrypted-reasoning-kite"}
            ev.append(("response.output_item.added", s({"type": "response.output_item.added",
                       "output_index": 0, "item": r0})))
            ev.append(("response.reasoning_summary_part.added", s({
                "type": "response.reasoning_summary_part.added", "item_id": rid_,
                "output_index": 0, "summary_index": 0,
                "part": {"type": "summary_text", "text": ""}})))
            ev.append(("response.reasoning_summary_text.delta", s({
                "type": "response.reasoning_summary_text.delta", "item_id": rid_,
                "output_index": 0, "summary_index": 0, "delta": summ})))
            ev.append(("response.reasoning_summary_text.done", s({
                "type": "response.reasoning_summary_text.done", "item_id": rid_,
                "output_index": 0, "summary_index": 0, "text": summ})))
            ev.append(("response.reasoning_summary_part.done", s({
                "type": "response.reasoning_summary_part.done", "item_id": rid_,
                "output_index": 0, "summary_index": 0,
                "part": {"type": "summary_text", "text": summ}})))
            ev.append(("response.output_item.done", s({"type": "response.output_item.done",
                       "output_index": 0, "item": rfull})))
            items_done.append(rfull)
            out_idx = 1
        call = dict(plan[1])
        iid = new_id("fc_")
        call_id = new_id("call_")
        if call["type"] == "function_call":
            full = {"id": iid, "type": "function_call", "status": "completed",
                    "call_id": call_id, "name": call["name"],
                    "arguments": call["arguments"]}
            item0 = dict(full, status="in_progress", arguments="")
            ev.append(("response.output_item.added", s({"type": "response.output_item.added",
                       "output_index": out_idx, "item": item0})))
            ev.append(("response.function_call_arguments.delta", s({
                "type": "response.function_call_arguments.delta", "item_id": iid,
                "output_index": out_idx, "delta": call["arguments"]})))
            ev.append(("response.function_call_arguments.done", s({
                "type": "response.function_call_arguments.done", "item_id": iid,
                "output_index": out_idx, "arguments": call["arguments"]})))
        else:  # custom_tool_call
            full = {"id": iid, "type": "custom_tool_call", "status": "completed",
                    "call_id": call_id, "name": call["name"], "input": call["input"]}
            if "namespace" in call:
                full["namespace"] = call["namespace"]
            item0 = dict(full, status="in_progress", input="")
            ev.append(("response.output_item.added", s({"type": "response.output_item.added",
                       "output_index": out_idx, "item": item0})))
            ev.append(("response.custom_tool_call_input.delta", s({
                "type": "response.custom_tool_call_input.delta", "item_id": iid,
                "output_index": out_idx, "delta": call["input"]})))
            ev.append(("response.custom_tool_call_input.done", s({
                "type": "response.custom_tool_call_input.done", "item_id": iid,
                "output_index": out_idx, "input": call["input"]})))
        item = full
    ev.append(("response.output_item.done", s({"type": "response.output_item.done",
               "output_index": out_idx, "item": item})))
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    ev.append(("response.completed", s({"type": "response.completed",
               "response": oai_response_obj(body, rid, "completed", items_done + [item], usage)})))
    return ev


# ------------------------------------------------------------------- server --

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("fake: " + (fmt % a) + "\n")

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("content-encoding", "").lower() == "zstd":
            return raw, None  # not decodable with stdlib; logged raw length only
        if self.headers.get("content-encoding", "").lower() == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        try:
            return raw, json.loads(raw) if raw else None
        except ValueError:
            return raw, None

    def _log(self, raw, body):
        hdrs = []
        for k, v in self.headers.items():
            if k.lower() in SECRET_HEADERS:
                v = "<redacted>"
            hdrs.append([k, v])
        entry = {"t": time.time(), "method": self.command, "path": self.path,
                 "headers": hdrs, "body": body}
        if body is None and raw:
            entry["raw"] = raw.decode("utf-8", "replace")
        log(entry)

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", new_id("req_"))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("request-id", new_id("req_"))
        self.end_headers()
        for name, data in events:
            if name in DROP:
                continue
            data = {k: v for k, v in data.items() if k not in STRIP}
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_HEAD(self):
        raw, body = b"", None
        self._log(raw, body)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self._log(b"", None)
        p = self.path.split("?")[0]
        if p.endswith("/models"):
            if "anthropic-version" in self.headers:
                self._json(200, {"data": [{"type": "model", "id": "claude-sonnet-4-5",
                                           "display_name": "fake", "created_at": "2025-01-01T00:00:00Z"}],
                                 "has_more": False, "first_id": "claude-sonnet-4-5",
                                 "last_id": "claude-sonnet-4-5"})
            else:
                self._json(200, {"object": "list", "data": [
                    {"id": "kite-test", "object": "model", "created": 0, "owned_by": "kite"}],
                    "models": []})
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": p}})

    def do_POST(self):
        global CLAUDE_CWD
        raw, body = self._body()
        self._log(raw, body)
        p = self.path.split("?")[0]
        if body is None:
            body = {}
        if p.endswith("/v1/messages/count_tokens"):
            n = max(1, len(raw) // 4)
            self._json(200, {"input_tokens": n})
        elif p.endswith("/v1/messages"):
            CLAUDE_CWD = find_cwd(body) or CLAUDE_CWD
            plan = anth_plan(body)
            if body.get("stream"):
                self._sse(anth_sse(body, plan))
            else:
                self._json(200, anth_message(body, plan))
        elif p.endswith("/responses"):
            plan = oai_plan(body)
            self._sse(oai_sse(body, plan))
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": p}})


def main():
    global LOG_PATH
    port = int(sys.argv[1])
    LOG_PATH = sys.argv[2]
    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    sys.stderr.write(f"fake provider on 127.0.0.1:{port}, log {LOG_PATH}\n")
    srv.serve_forever()


if __name__ == "__main__":
    main()
