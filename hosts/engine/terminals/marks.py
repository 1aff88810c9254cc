"""The shell's marks in a terminal's output: OSC 133 (A prompt, B command line, C executed,
D;<exit> finished) and OSC 7 (the working directory), taken out of the bytes a client is sent.

Pure: bytes in, text and marks out. A sequence split across two reads is held back until its
end arrives, so a mark is never half said as output; any other escape sequence (a title, a
colour, a hyperlink) is output and passes through as it came.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

_OSC = b"\x1b]"
_BEL = b"\x07"
_ST = b"\x1b\\"
#: An OSC longer than this without its end is not a mark: it is output, said as it came.
MAX_MARK_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Mark:
    #: "133" or "7".
    code: str
    #: What follows the code: "A", "B", "C", "D;0" for 133; the URL for 7.
    value: str


Piece = bytes | Mark


class MarkParser:
    """Splits pty output into output bytes and the shell's marks, across reads."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> list[Piece]:
        buf = self._held + data if self._held else data
        self._held = b""
        pieces: list[Piece] = []
        start = 0  # where the output not yet handed out begins
        at = 0
        while True:
            osc = buf.find(_OSC, at)
            if osc < 0:
                # A lone ESC at the very end may begin a mark the next read finishes.
                if buf.endswith(b"\x1b"):
                    self._held = b"\x1b"
                    buf = buf[:-1]
                break
            end, after = _terminator(buf, osc + 2)
            if end < 0:
                if len(buf) - osc <= MAX_MARK_BYTES:
                    self._held = buf[osc:]
                    buf = buf[:osc]
                    break
                at = osc + 2
                continue
            mark = _mark(buf[osc + 2 : end])
            if mark is not None:
                if osc > start:
                    pieces.append(buf[start:osc])
                pieces.append(mark)
                start = after
            at = after
        if len(buf) > start:
            pieces.append(buf[start:])
        return pieces

    def flush(self) -> bytes:
        """What is held back, once no more output will come."""
        held, self._held = self._held, b""
        return held


def _terminator(buf: bytes, at: int) -> tuple[int, int]:
    """Where the OSC begun before `at` ends (BEL or ST), and where what follows it begins."""
    bel = buf.find(_BEL, at)
    st = buf.find(_ST, at)
    if bel < 0 and st < 0:
        return -1, -1
    if st < 0 or 0 <= bel < st:
        return bel, bel + 1
    return st, st + 2


def _mark(payload: bytes) -> Mark | None:
    code, _, value = payload.partition(b";")
    if code not in (b"133", b"7"):
        return None
    return Mark(code.decode("ascii"), value.decode("utf-8", "replace"))


def cwd_uri(value: str) -> str | None:
    """The file: URI an OSC 7 names (file://<host>/<path>), without its host; None if none."""
    parts = urlsplit(value)
    if parts.scheme != "file" or not parts.path.startswith("/"):
        return None
    return PurePosixPath(unquote(parts.path)).as_uri()


# -- the command line, read back off what the line editor drew ------------------------------

_ESCAPE = re.compile(
    # CSI: cursor moves, erases, colours, modes (ECMA-48: parameter, intermediate, final bytes)
    r"\x1b\[(?P<csi>[0-?]*)[ -/]*(?P<final>[@-~])"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: a title, a hyperlink
    # Any other escape, its intermediate bytes and its final one: zsh's keypad modes (ESC =,
    # ESC >), a character set chosen (ESC ( B).
    r"|\x1b[ -/]*[0-~]"
)


def command_line(drawn: str) -> str:
    """The command typed at a prompt, from what the shell echoed between its B and C marks.

    A small line editor: printable text overwrites at the cursor, a backspace and CSI n D move
    it left, CSI n C right, CSI K erases to the end, a carriage return goes back to the
    start of the line; colours and other sequences draw nothing. Lines are joined by newlines.
    """
    lines: list[list[str]] = [[]]
    cursor = 0
    at = 0
    for match in _ESCAPE.finditer(drawn):
        cursor = _type(lines, cursor, drawn[at : match.start()])
        at = match.end()
        final, params = match.group("final"), match.group("csi") or ""
        count = int(params) if params.isdigit() else 1
        line = lines[-1]
        if final == "D":
            cursor = max(0, cursor - count)
        elif final == "C":
            cursor = min(len(line), cursor + count)
        elif final == "K" and params in ("", "0"):
            del line[cursor:]
    _type(lines, cursor, drawn[at:])
    return "\n".join("".join(line).rstrip() for line in lines).strip()


def _type(lines: list[list[str]], cursor: int, text: str) -> int:
    for char in text:
        line = lines[-1]
        if char == "\b":
            cursor = max(0, cursor - 1)
        elif char == "\r":
            cursor = 0
        elif char == "\n":
            lines.append([])
            cursor = 0
        elif char >= " " and char != "\x7f":
            if cursor < len(line):
                line[cursor] = char
            else:
                line.append(char)
            cursor += 1
    return cursor
