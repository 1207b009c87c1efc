#!/usr/bin/env python3
"""Checks the links of the documents users read (`make lint`).

- Relative links resolve to a file or folder of the repository, and a `#anchor` to a heading
  of the Markdown file it names, by GitHub's rules for heading ids.
- `[text][label]` references have a definition.
- The guide's chapters (pyo3-dlpack/guide/*.md) link to each other, to other files and to
  the API with reference links defined at the chapter's end (a file, a docs.rs address),
  which GitHub follows; docs.rs follows the intra-doc definitions of the same labels that
  pyo3-dlpack/src/guide.rs puts first. Every label a chapter defines so must be defined there
  too (rustdoc then checks the intra-doc target), and a chapter has no inline relative link
  (docs.rs would have no page for it).
- docs.rs addresses of this crate (https://docs.rs/pyo3-dlpack/latest/pyo3_dlpack/...) name a
  page, and an id on it, of the documentation `cargo doc` built (skipped, with a note, when
  none is built).

Usage: python tests/docs/check_links.py [FILE.md ...]; exits 1 on a broken link.
"""

import glob
import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDE = os.path.join(ROOT, "pyo3-dlpack", "guide")
GUIDE_RS = os.path.join(ROOT, "pyo3-dlpack", "src", "guide.rs")
DOCS_RS = "https://docs.rs/pyo3-dlpack/latest/pyo3_dlpack/"
DOCUMENTS = ["README.md", "CHANGELOG.md", "BENCHMARKS.md", "benchmarks/README.md"]

FENCE = re.compile(r"^ {0,3}(```+|~~~+)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
FULL_REF = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])+)\]\[([^\]]+)\]")
DEFINITION = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+.*)?$")
BACKTICK_SHORTCUT = re.compile(r"\[(`[^`\]]+`)\](?![\[(:])")
RUSTDOC_DEFINITION = re.compile(r"^\[([^\]]+)\]: (crate::\S+)$", re.M)


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker):]:
                fence = None
            continue
        if fence is None:
            yield number, line


def github_slug(heading):
    """The id GitHub gives a heading: its text lowercased, punctuation dropped, spaces as
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in "-_ " or category[0] in "LN" or category == "Mn":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor of a Markdown file: its headings' ids (repeats numbered) and HTML ids."""
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found, seen = set(), {}
        for _, line in prose_lines(text):
            match = HEADING.match(line)
            if match:
                slug = github_slug(match.group(2))
                count = seen.get(slug, 0)
                seen[slug] = count + 1
                found.add(slug if count == 0 else f"{slug}-{count}")
            found.update(HTML_ID.findall(line))
        cache[path] = found
    return cache[path]


def doc_dir():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.path.join(target, "doc", "pyo3_dlpack")
    return path if os.path.isdir(path) else None


def check_docs_rs(url, docs):
    """None when a docs.rs address of this crate names a built page (and id), else why not."""
    page, _, fragment = url[len(DOCS_RS):].partition("#")
    path = os.path.join(docs, page)
    if page == "" or page.endswith("/"):
        path = os.path.join(path, "index.html")
    if not os.path.isfile(path):
        return f"no page {os.path.relpath(path, docs)} in the built documentation"
    if fragment:
        with open(path, encoding="utf-8") as f:
            if f'id="{fragment}"' not in f.read():
                return f"no id {fragment!r} on {page}"
    return None


def check_target(source, target, docs, notes):
    """None when `target`, linked from the file `source`, resolves, else why not."""
    if target.startswith(DOCS_RS):
        if docs is None:
            notes.add("no built documentation (cargo doc): docs.rs addresses not checked")
            return None
        return check_docs_rs(target, docs)
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None  # another site, or a rustdoc path (checked by rustdoc)
    path, _, fragment = target.partition("#")
    # A symlinked document's links are relative to the file it links to.
    base = os.path.dirname(os.path.realpath(source))
    resolved = os.path.normpath(os.path.join(base, path)) if path else os.path.realpath(source)
    if not os.path.exists(resolved):
        return f"no file {os.path.relpath(resolved, ROOT)}"
    if fragment and resolved.endswith(".md"):
        if fragment not in anchors(resolved):
            return f"no heading #{fragment} in {os.path.relpath(resolved, ROOT)}"
    return None


def is_relative(target):
    """A link into the repository (a file, or an anchor of this one)."""
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("//")


def rustdoc_labels():
    with open(GUIDE_RS, encoding="utf-8") as f:
        return {label.lower() for label, _ in RUSTDOC_DEFINITION.findall(f.read())}


def check_file(path, docs, notes, guide_labels):
    errors = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    name = os.path.relpath(path, ROOT)
    in_guide = os.path.dirname(os.path.abspath(path)) == GUIDE
    definitions = {}
    lines = list(prose_lines(text))
    for number, line in lines:
        match = DEFINITION.match(line)
        if match:
            definitions.setdefault(match.group(1).lower(), (number, match.group(2)))
    for number, line in lines:
        if DEFINITION.match(line):
            continue
        spans = CODE_SPAN.sub(lambda m: "x" * len(m.group(0)) if "[" not in m.group(2) else m.group(0), line)
        for _, target in INLINE.findall(spans):
            why = check_target(path, target, docs, notes)
            if why:
                errors.append(f"{name}:{number}: ({target}): {why}")
            elif in_guide and is_relative(target):
                errors.append(
                    f"{name}:{number}: ({target}): a relative link is broken on docs.rs; use a "
                    "reference link whose label pyo3-dlpack/src/guide.rs (links!) defines too"
                )
        for _, label in FULL_REF.findall(line):
            if label.lower() not in definitions:
                errors.append(f"{name}:{number}: [{label}]: no definition")
        if in_guide:
            for label in BACKTICK_SHORTCUT.findall(line):
                if label.lower() not in definitions:
                    errors.append(f"{name}:{number}: [{label}]: no definition")
    for label, (number, target) in definitions.items():
        why = check_target(path, target, docs, notes)
        if why:
            errors.append(f"{name}:{number}: [{label}]: {target}: {why}")
        points_inside = target.startswith(DOCS_RS) or is_relative(target)
        if in_guide and points_inside and label not in guide_labels:
            errors.append(
                f"{name}:{number}: [{label}]: no intra-doc definition in "
                "pyo3-dlpack/src/guide.rs (links!), so docs.rs would follow this one"
            )
    return errors


def main(argv):
    if argv:
        files = [os.path.abspath(p) for p in argv]
    else:
        files = [os.path.join(ROOT, p) for p in DOCUMENTS]
        files += sorted(glob.glob(os.path.join(GUIDE, "*.md")))
    seen, unique = set(), []
    for path in files:  # a symlinked chapter is its target's file, checked once
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append(path)
    docs, notes, errors = doc_dir(), set(), []
    guide_labels = rustdoc_labels()
    for path in unique:
        errors += check_file(path, docs, notes, guide_labels)
    for note in sorted(notes):
        print(f"check_links: note: {note}")
    for error in errors:
        print(error)
    print(f"check_links: {len(unique)} files, {len(errors)} broken links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
