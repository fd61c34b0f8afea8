"""A small OTLP/HTTP receiver for tests: decodes the protobuf trace and metric exports
kite sends (with the `opentelemetry-proto` package) and writes one JSON line per span or
metric to the file named by its first argument, and each whole export, decoded, to the
file named by the second when given. It prints the port it listens on, then serves until
killed.

    python otlp_receiver.py OUT.jsonl [RAW.jsonl]
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]
RAW = sys.argv[2] if len(sys.argv) > 2 else None


def value(v):
    """An OTLP AnyValue as plain JSON."""
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return v["doubleValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [value(x) for x in v["arrayValue"].get("values", [])]
    return v


def attributes(items):
    return {a["key"]: value(a.get("value", {})) for a in items or []}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        lines = []
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            reply = ExportTraceServiceResponse()
            data = MessageToDict(request)
            for rs in data.get("resourceSpans", []):
                resource = attributes(rs.get("resource", {}).get("attributes"))
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        lines.append({
                            "signal": "span",
                            "name": span["name"],
                            "kind": span.get("kind"),
                            "trace_id": span.get("traceId"),
                            "span_id": span.get("spanId"),
                            "parent_span_id": span.get("parentSpanId", ""),
                            "start_ns": int(span.get("startTimeUnixNano", 0)),
                            "end_ns": int(span.get("endTimeUnixNano", 0)),
                            "status": span.get("status", {}),
                            "attributes": attributes(span.get("attributes")),
                            "events": [e.get("name") for e in span.get("events", [])],
                            "resource": resource,
                            "authorization": self.headers.get("Authorization"),
                        })
        elif self.path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            reply = ExportMetricsServiceResponse()
            data = MessageToDict(request)
            for rm in data.get("resourceMetrics", []):
                for sm in rm.get("scopeMetrics", []):
                    for m in sm.get("metrics", []):
                        lines.append({"signal": "metric", "name": m["name"], "unit": m.get("unit")})
        else:
            self.send_response(404)
            self.end_headers()
            return
        with open(OUT, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        if RAW:
            with open(RAW, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "export": data}) + "\n")
        payload = reply.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
