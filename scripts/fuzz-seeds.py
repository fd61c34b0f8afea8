#!/usr/bin/env python3
"""Seeds for the fuzz targets that no file in testdata/ holds as it is, written by
scripts/fuzz.sh into CORPUS/TARGET/seed-*; a seed already there is left as it is.

    scripts/fuzz-seeds.py CORPUS

- serve_requests: the JSON bodies the gateway's tests send (`json!({...})` and raw
  strings in crates/kite-serve/tests, crates/kite-cli/tests/serve*.rs and the Responses
  decoder's tests), those that are plain JSON; a body that only adds fields is also put
  into each API's smallest request, as the tests do; and the coding agents' real requests
  in testdata/clients.
- skill_archive: the test skills zipped (a folder at the top, a SKILL.md at the top, an
  executable script), and the hostile shapes the loader refuses (`../`, a link, a member
  twice, no skill).
- state: conversation states, as the bytes `State::to_bytes` writes and as their JSON body.
"""

import hashlib
import io
import json
import pathlib
import re
import stat
import sys
import warnings
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def put(corpus, target, data):
    """Writes `data` (bytes) as a seed of `target`, named by its digest."""
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("seed-" + hashlib.sha256(data).hexdigest()[:16])
    if not path.exists():
        path.write_bytes(data)


def balanced(text, start):
    """The text from `start` (just after an opening parenthesis) to its closing one."""
    depth, i, quoted = 1, start, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return None


def as_json(text):
    """`text` as a JSON object, allowing the trailing commas `json!` takes, else None."""
    for t in (text, re.sub(r",(\s*[}\]])", r"\1", text)):
        try:
            value = json.loads(t)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def test_bodies():
    """The JSON objects the gateway's tests write, that are plain JSON."""
    files = sorted(
        [
            *(ROOT / "crates/kite-serve/tests").glob("*.rs"),
            *(ROOT / "crates/kite-cli/tests").glob("serve*.rs"),
            ROOT / "crates/kite-wire/src/openai_responses/serve/tests.rs",
        ]
    )
    found = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        for m in re.finditer(r"json!\(", text):
            inner = balanced(text, m.end())
            body = inner and as_json(inner)
            if body:
                found.append(body)
        for m in re.finditer(r'r#"(\{.*?\})"#', text, re.S):
            body = as_json(m.group(1))
            if body:
                found.append(body)
    return found


# The smallest request of each API the gateway serves.
BASES = [
    {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
    {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]},
    {"model": "m", "input": "Hi"},
]


def serve_requests(corpus):
    for body in test_bodies():
        put(corpus, "serve_requests", json.dumps(body).encode())
        if "model" not in body:
            for base in BASES:
                put(corpus, "serve_requests", json.dumps({**base, **body}).encode())
    # The coding agents' own requests, as they sent them.
    for f in sorted((ROOT / "testdata/clients").glob("*/*.json")):
        put(corpus, "serve_requests", f.read_bytes())


def zipped(members, compression=zipfile.ZIP_DEFLATED):
    """An archive of `(name, bytes, unix mode)` members."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = mode << 16
            info.compress_type = compression
            z.writestr(info, data)
    return out.getvalue()


def folder(path, prefix):
    """The files under `path` as members under `prefix`, scripts executable."""
    out = []
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        mode = stat.S_IFREG | (0o755 if f.suffix in (".sh", ".py") else 0o644)
        out.append((prefix + f.relative_to(path).as_posix(), f.read_bytes(), mode))
    return out


def skill_archive(corpus):
    skills = ROOT / "testdata/skills"
    file = stat.S_IFREG | 0o644
    for name in ("word-count", "release-notes", "csv-stats"):
        put(corpus, "skill_archive", zipped(folder(skills / "valid" / name, name + "/")))
    put(corpus, "skill_archive", zipped(folder(skills / "broken/Three-Problems", "x/")))
    # SKILL.md at the top: the skill is named after the archive, which the target calls
    # `seed.skill`. Stored, not deflated.
    top = b"---\nname: seed\ndescription: A skill at the archive's top.\n---\n# Seed\n"
    put(corpus, "skill_archive", zipped([("SKILL.md", top, file)], zipfile.ZIP_STORED))
    md = (skills / "valid/word-count/SKILL.md").read_bytes()
    link = stat.S_IFLNK | 0o777
    for members in (
        [("../word-count/SKILL.md", md, file)],
        [("word-count/SKILL.md", md, file), ("word-count/out", b"/etc/passwd", link)],
        [("word-count/SKILL.md", md, file), ("word-count/SKILL.md", md, file)],
        [("a/SKILL.md", md, file), ("b/SKILL.md", md, file)],
        [("__MACOSX/._x", b"", file), ("word-count/SKILL.md", md, file)],
    ):
        put(corpus, "skill_archive", zipped(members))


def state(corpus):
    """States as `State::to_bytes` writes them: `kite-state`, the format (1), the body's
    SHA-256 cut to 8 bytes, and the body as JSON."""
    text = lambda t: {"type": "text", "text": t}
    states = [
        {"provider": None, "messages": []},
        {
            "provider": "anthropic",
            "messages": [
                {"role": "user", "parts": [text("time?")]},
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "reasoning",
                            "text": "thinking",
                            "metadata": {"anthropic": {"signature": "sig"}},
                        },
                        {
                            "type": "tool_call",
                            "id": "c1",
                            "name": "now",
                            "arguments": "{}",
                            "metadata": {"responses": {"item_id": "fc_1"}},
                        },
                    ],
                },
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "tool_result",
                            "call_id": "c1",
                            "name": "now",
                            "content": [text("12:00")],
                            "is_error": False,
                        }
                    ],
                },
                {"role": "user", "parts": [text("the user opened the clock page")]},
            ],
        },
        {
            "provider": "openai",
            "messages": [
                {
                    "role": "user",
                    "parts": [
                        text("What is this?"),
                        {"type": "image", "source": {"kind": "url", "url": "https://x/y.png"}},
                        {
                            "type": "image",
                            "source": {"kind": "base64", "media_type": "image/png", "data": "AAAA"},
                            "detail": "high",
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "parts": [{"type": "refusal", "text": "No."}],
                    "metadata": {"chat": {"id": "chatcmpl-1", "n": 1.5}},
                },
            ],
        },
    ]
    for s in states:
        body = json.dumps(s, separators=(",", ":")).encode()
        put(corpus, "state", body)
        put(corpus, "state", b"kite-state\x01" + hashlib.sha256(body).digest()[:8] + body)


def main():
    # A member twice is one of the seeds.
    warnings.filterwarnings("ignore", "Duplicate name")
    corpus = pathlib.Path(sys.argv[1])
    serve_requests(corpus)
    skill_archive(corpus)
    state(corpus)


if __name__ == "__main__":
    main()
