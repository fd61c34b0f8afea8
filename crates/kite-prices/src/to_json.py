"""Writes the price data of a genai-prices package (its generated `data.py`) as JSON, with
the standard library alone: the file is parsed, never run. Each constructor call becomes an
object of its keyword arguments, Decimal and numbers become numbers, dates and times ISO
text.

    python3 to_json.py path/to/genai_prices/data.py "genai-prices 0.2.3" > prices.json
"""

import ast
import json
import sys


def value(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [value(x) for x in node.elts]
    if isinstance(node, ast.Dict):
        return {value(k): value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -value(node.operand)
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        args = [value(a) for a in node.args]
        if name == "Decimal":
            return float(args[0])
        if name == "date":
            return "%04d-%02d-%02d" % tuple(args[:3])
        if name == "time":
            return "%02d:%02d:%02d" % tuple((args + [0, 0, 0])[:3])
        if name == "datetime":
            return "%04d-%02d-%02dT%02d:%02d:%02d" % tuple((args + [0] * 6)[:6])
        if name == "timezone" or name == "timedelta":
            return None
        if args:
            raise ValueError("positional arguments to %s" % name)
        return {k.arg: value(k.value) for k in node.keywords}
    if isinstance(node, ast.Attribute) and node.attr == "utc":
        return None
    raise ValueError("cannot read %s" % ast.dump(node)[:200])


# What kite prices with: the rest (names, comments, usage extractors) is left out.
PROVIDER_KEYS = ("id", "api_pattern", "model_match", "fallback_model_providers", "models")
MODEL_KEYS = ("id", "match", "prices")


def trimmed(providers):
    out = []
    for p in providers:
        q = {k: p[k] for k in PROVIDER_KEYS if p.get(k) is not None}
        q["models"] = [{k: m[k] for k in MODEL_KEYS if k in m} for m in p.get("models", [])]
        out.append(q)
    return out


def main():
    tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
    for stmt in tree.body:
        target = getattr(stmt, "target", None)
        if isinstance(target, ast.Name) and target.id == "providers":
            data = {"source": sys.argv[2] if len(sys.argv) > 2 else "genai-prices", "providers": trimmed(value(stmt.value))}
            json.dump(data, sys.stdout, separators=(",", ":"))
            return
    raise SystemExit("no `providers` in %s" % sys.argv[1])


main()
