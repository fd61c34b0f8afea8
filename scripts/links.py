#!/usr/bin/env python3
"""Checks the links between kite's Markdown files: the README, the crates' READMEs,
ARCHITECTURE.md and the book (docs/src). Every relative link must name a file or folder
that exists, and a #fragment a heading of the Markdown file it points into (mdBook's and
GitHub's ids: lower case, spaces to '-', other punctuation dropped). Links to the web are
not followed. Every page the book's SUMMARY.md lists must exist, and every page of the book
must be listed. Prints each broken link and exits 1 if there is one."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def prose(text):
    """The text outside fenced code blocks and inline code."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def slug(heading):
    heading = re.sub(r"<[^>]+>", "", heading).strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def anchors(path):
    ids = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n, s = 0, base
            while s in ids:
                n += 1
                s = f"{base}-{n}"
            ids.add(s)
    # Headings written in code (`## \`kite ask\``) keep their words.
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{1,6}\s+`([^`]*)`\s*$", line)
        if m:
            ids.add(slug(m.group(1)))
    return ids


def files():
    yield from ROOT.glob("*.md")
    yield from ROOT.glob("crates/*/README.md")
    yield from (ROOT / "docs").rglob("*.md")


def main():
    broken = []
    for md in files():
        text = prose(md.read_text(encoding="utf-8"))
        for target in LINK.findall(text) + IMAGE.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # the web, mail
            path, _, fragment = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            where = md.relative_to(ROOT)
            if not dest.exists():
                broken.append(f"{where}: {target}: no such file")
                continue
            if fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                broken.append(f"{where}: {target}: no heading #{fragment}")
    summary = ROOT / "docs/src/SUMMARY.md"
    if summary.exists():
        listed = {
            (summary.parent / t).resolve()
            for t in LINK.findall(prose(summary.read_text(encoding="utf-8")))
        }
        for page in (ROOT / "docs/src").rglob("*.md"):
            if page.name != "SUMMARY.md" and page.resolve() not in listed:
                broken.append(f"docs/src/SUMMARY.md: does not list {page.relative_to(ROOT)}")
    for b in broken:
        print(b)
    if broken:
        print(f"links: {len(broken)} broken", file=sys.stderr)
        return 1
    print("links: all resolve", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
