#!/usr/bin/env python3
"""The gateway's peak memory under large, tool-heavy requests: `kite serve` in front of a
loopback upstream that answers at once, sent N requests of about M MiB at the same time,
with the peak resident memory (VmHWM) of the kite process read from /proc.

    scripts/body-memory.py [--kite target/release/kite] [--requests 32] [--mib 15]
                           [--decoding-mb 64]

--decoding-mb sets [serve] max_decoding_mb (1048576: no bound, as before there was one).
Prints one JSON line: the figures, and how many requests were answered 200 or 503.
"""
import argparse, http.client, http.server, json, os, socket, subprocess, sys, tempfile
import threading, time

ANSWER = (
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    '[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}\n\n'
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    '[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
).encode()


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        left = int(self.headers.get("content-length", 0))
        while left:
            left -= len(self.rfile.read(min(left, 1 << 20)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *_):
        pass


def body(mib):
    schema = {"type": "object", "properties": {
        f"field_{i}": {"type": "string", "description": "d" * 40} for i in range(20)}}
    tools, size = [], 0
    while size < mib << 20:
        tool = {"type": "function", "function": {
            "name": f"tool_{len(tools)}", "description": "a tool", "parameters": schema}}
        size += len(json.dumps(tool))
        tools.append(tool)
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                       "tools": tools}).encode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kite", default="target/debug/kite")
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--mib", type=int, default=15)
    p.add_argument("--decoding-mb", type=int, default=64)
    a = p.parse_args()
    up = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "kite.toml"), "w") as f:
        f.write(f"[serve]\nmax_decoding_mb = {a.decoding_mb}\n")
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    addr = f"127.0.0.1:{port.getsockname()[1]}"
    port.close()
    env = dict(os.environ, OPENAI_API_KEY="sk-memory-test-000000",
               HOME=folder, XDG_DATA_HOME=folder, KITE_LOG="off")
    kite = subprocess.Popen(
        [a.kite, "--config", os.path.join(folder, "kite.toml"), "serve", "--addr", addr,
         "--provider", "openai", "--base-url", f"http://127.0.0.1:{up.server_port}/v1",
         "--model", "m", "--no-store", "--no-auth"],
        env=env, stderr=subprocess.PIPE, text=True)
    said = []
    for _ in range(100):
        line = kite.stderr.readline()
        said.append(line)
        if line.startswith("kite: serving"):
            break
        if not line:
            sys.exit("kite serve did not start: " + "".join(said))
    rest = []
    threading.Thread(target=lambda: rest.append(kite.stderr.read()), daemon=True).start()
    payload = body(a.mib)
    statuses, lock = [], threading.Lock()

    def ask():
        c = http.client.HTTPConnection(*addr.split(":"), timeout=300)
        try:
            c.request("POST", "/v1/chat/completions", payload,
                      {"content-type": "application/json"})
        except BrokenPipeError:
            pass  # refused before the body was read: the answer is there to read
        try:
            r = c.getresponse()
            r.read()
            status = r.status
        except OSError as e:
            status = type(e).__name__
        with lock:
            statuses.append(status)

    started = time.time()
    threads = [threading.Thread(target=ask) for _ in range(a.requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - started
    with open(f"/proc/{kite.pid}/status") as f:
        status = dict(l.split(":", 1) for l in f if ":" in l)
    kite.terminate()
    kite.wait()
    print(json.dumps({
        "requests": a.requests, "body_mib": round(len(payload) / (1 << 20), 1),
        "max_decoding_mb": a.decoding_mb,
        "peak_rss_mib": int(status["VmHWM"].split()[0]) >> 10,
        "answered_200": statuses.count(200), "refused_503": statuses.count(503),
        "other": sorted({str(s) for s in statuses if s not in (200, 503)}),
        "seconds": round(took, 1)}))


if __name__ == "__main__":
    sys.exit(main())
