"""A markdown file's front matter: the `---` block at its top, read as the simple YAML that
skills, agents, instructions and prompts carry.

Not a YAML parser (no new dependency for a header of a few keys), but the subset these files
use, read strictly: `key: value` lines, where a value is plain, single- or double-quoted, a
flow list (`[a, "b"]`), `true`/`false`, or a block (`|` or `>`) or a list (`- item` lines)
indented below its key; `#` starts a comment on a line of its own or after a plain value. A
line that is none of these is a `FrontMatterError` naming its line, never a guess. A file
with no `---` on its first line has no front matter (an empty mapping).
"""

from __future__ import annotations

import re

#: What a value may be: a string, a flag, or a list of strings.
Value = str | bool | list[str]

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*)|\s*)$")
_ITEM = re.compile(r"^\s*-(?:\s+(.*)|\s*)$")
_FENCE = "---"


class FrontMatterError(ValueError):
    """The front matter is not what these files carry; the message says where and why."""


def split(text: str) -> tuple[str | None, str]:
    """The front matter's text (None when the file has none) and the body after it.

    FrontMatterError where a `---` opens a block that no `---` (or `...`) closes."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != _FENCE:
        return None, text
    for n, line in enumerate(lines[1:], start=1):
        if line.rstrip("\r\n").rstrip() in (_FENCE, "..."):
            return "".join(lines[1:n]), "".join(lines[n + 1 :])
    raise FrontMatterError("the front matter opened by --- on line 1 is never closed")


def parse(text: str) -> dict[str, Value]:
    """The keys of a file's front matter (empty where it has none); FrontMatterError where it
    cannot be read."""
    block, _ = split(text)
    if block is None:
        return {}
    found: dict[str, Value] = {}
    lines = block.splitlines()
    n = 0
    while n < len(lines):
        line = lines[n]
        n += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.match(line)
        if match is None:
            raise FrontMatterError(f"line {n + 1}: expected `key: value`, found {line.strip()!r}")
        key, raw = match.group(1), (match.group(2) or "").strip()
        if key in found:
            raise FrontMatterError(f"line {n + 1}: {key} is given twice")
        if raw in ("", "|", ">", "|-", ">-", "|+", ">+"):
            # What is indented below the key: a list, a block of text, or nothing.
            below = []
            while n < len(lines) and (
                not lines[n].strip()
                or lines[n][:1] in (" ", "\t")
                # A list's items may stand at the key's own indent, as YAML allows.
                or (not raw and _ITEM.match(lines[n]) is not None)
            ):
                below.append(lines[n])
                n += 1
            found[key] = _below(key, raw, below, n - len(below) + 2)
        else:
            found[key] = _scalar(key, raw, n + 1)
    return found


def _below(key: str, marker: str, lines: list[str], first: int) -> Value:
    items = [_ITEM.match(line) for line in lines if line.strip()]
    if not items:
        return ""
    if not marker and all(items):
        return [_plain_item(key, item.group(1) or "", first) for item in items if item]
    if not marker:
        raise FrontMatterError(
            f"line {first}: {key} is followed by indented lines that are not `- item` lines"
        )
    texts = [line.strip() for line in lines]
    while texts and not texts[-1]:
        texts.pop()
    if marker.startswith("|"):
        return "\n".join(texts)
    # Folded: lines joined by spaces, a blank line kept as a line break.
    return "\n".join(" ".join(part.split("\n")) for part in "\n".join(texts).split("\n\n"))


def _plain_item(key: str, raw: str, line: int) -> str:
    value = _scalar(key, raw.strip(), line)
    if not isinstance(value, str):
        raise FrontMatterError(f"line {line}: {key} holds an item that is not text")
    return value


def _scalar(key: str, raw: str, line: int) -> Value:
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise FrontMatterError(f"line {line}: {key}'s list is not closed with ]")
        inner = raw[1:-1].strip()
        if not inner:
            return []
        return [_unquoted(key, item.strip(), line) for item in _split_flow(inner)]
    if raw.startswith(("'", '"')):
        return _unquoted(key, raw, line)
    # A plain value: a comment after it is not part of it.
    plain = re.sub(r"\s+#.*$", "", raw).strip()
    if plain in ("true", "True", "TRUE"):
        return True
    if plain in ("false", "False", "FALSE"):
        return False
    if plain.startswith(("{", "&", "*", "!", "%", "@", "`")):
        raise FrontMatterError(f"line {line}: {key}'s value {plain!r} is not read here")
    return plain


def _split_flow(inner: str) -> list[str]:
    """A flow list's items, split at commas outside quotes."""
    items, current, quote = [], "", ""
    for char in inner:
        if quote:
            current += char
            if char == quote:
                quote = ""
        elif char in ("'", '"'):
            quote = char
            current += char
        elif char == ",":
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return items


def _unquoted(key: str, raw: str, line: int) -> str:
    if raw[:1] in ("'", '"'):
        end = _closing(raw)
        # A quoted value followed by a comment is still a quoted value.
        if end < 0 or not (end == len(raw) - 1 or re.fullmatch(r"\s+#.*", raw[end + 1 :])):
            raise FrontMatterError(f"line {line}: {key}'s quoted value is not closed")
        body = raw[1:end]
        if raw[0] == "'":
            return body.replace("''", "'")
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)
    if raw.startswith(("[", "{")):
        raise FrontMatterError(f"line {line}: {key} holds a nested list, not read here")
    return raw


_ESCAPES = {"n": "\n", "t": "\t"}


def _closing(raw: str) -> int:
    """Where the quote opening `raw` closes (-1 where it does not): `''` inside single quotes
    and a backslash's next character inside double quotes do not close it."""
    quote, n = raw[0], 1
    while n < len(raw):
        char = raw[n]
        if quote == '"' and char == "\\":
            n += 2
            continue
        if char == quote:
            if quote == "'" and raw[n + 1 : n + 2] == "'":
                n += 2
                continue
            return n
        n += 1
    return -1
