"""The wire capture (AHPD_WIRE, `manage.py serve --wire <file>`): every frame of every
connection, both directions, appended to a file as JSON lines, for the protocol's checkers.

Each line is the JSON-RPC message with an `_ahpLog` beside its own keys, the shape VS Code's
agent host writes its traffic log in and `ahpd --wire` (the reference host) writes too:
`{"ts": ISO 8601 in UTC, "dir": "c2s" | "s2c", "connectionId", "transport", "byteLength"}`,
the direction from the client's side. A line goes through the redactions VS Code's log makes:
an `authenticate`'s token, any authorization string, a result's certificates, and a
`channel/frame` or `tcp/data`'s data. A line over 1 MiB is written again with its long strings
cut and `_ahpLog.truncated` set. The file rolls over at 75 MiB to `<file>.1` and five are kept
(the standard library's RotatingFileHandler); each is 0600, since a capture holds every root
config write a client sent. A frame that is not JSON (a client's mistake) is kept as its text,
under `raw`, with `_ahpLog.unparsed`.
"""

from __future__ import annotations

import errno
import json
import logging
import logging.handlers
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

C2S = "c2s"
S2C = "s2c"

#: A file rolls over past this, and this many rolled files are kept (seed 004's `wire`).
MAX_FILE_BYTES = 75 * 1024 * 1024
BACKUPS = 5
#: A line longer than this is written again with its long strings cut.
MAX_LINE_BYTES = 1024 * 1024
#: What a string is cut to in such a line.
CUT_STRING_CHARS = 4096

REDACTED = "<redacted>"
REDACTED_PAYLOAD = "<redacted channel payload>"
_PAYLOAD_METHODS = ("channel/frame", "tcp/data")
#: A host frame holding none of these needs no redaction: it is written as it was sent.
_MAY_HOLD_A_SECRET = ('uthorization"', '"certificates"', '"token"', "channel/frame", "tcp/data")


class WireCaptureError(ValueError):
    """The capture's file cannot be used; the message names it and why."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _redacted(value: Any, in_result: bool = False) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(item, str) and key.lower() == "authorization":
                out[key] = REDACTED
            elif in_result and key == "certificates":
                out[key] = REDACTED
            else:
                out[key] = _redacted(item, in_result)
        return out
    if isinstance(value, list):
        return [_redacted(item, in_result) for item in value]
    return value


def redact(message: Any) -> Any:
    """The message as the capture writes it (VS Code's log's redactions)."""
    if not isinstance(message, dict):
        return message
    out = {}
    method = message.get("method")
    for key, value in message.items():
        if key == "result":
            out[key] = _redacted(value, in_result=True)
        elif key == "params" and isinstance(value, dict):
            params = _redacted(value)
            if method == "authenticate" and "token" in params:
                params["token"] = REDACTED
            if method in _PAYLOAD_METHODS and "data" in params:
                params["data"] = REDACTED_PAYLOAD
            out[key] = params
        else:
            out[key] = _redacted(value)
    return out


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > CUT_STRING_CHARS:
        return value[:CUT_STRING_CHARS] + "…"
    if isinstance(value, dict):
        return {key: _cut(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut(item) for item in value]
    return value


def line_for(direction: str, text: str, connection_id: str, transport: str = "websocket") -> str:
    """One frame's line (without its newline)."""
    meta: dict[str, Any] = {
        "ts": _now(),
        "dir": direction,
        "connectionId": connection_id,
        "transport": transport,
        "byteLength": len(text.encode("utf-8", "surrogatepass")),
    }
    if direction == S2C and text.startswith("{") and not any(s in text for s in _MAY_HOLD_A_SECRET):
        # The host's own frame, compact JSON holding nothing to redact: _ahpLog is added to
        # its text as it is, not parsed and written again.
        line = text[:-1] + ("," if len(text) > 2 else "") + '"_ahpLog":' + json.dumps(meta) + "}"
        message: Any = None
    else:
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if isinstance(message, dict):
            message = redact(message)
            line = json.dumps({**message, "_ahpLog": meta}, ensure_ascii=False)
        else:
            # Not a JSON object: kept as its text, so the capture shows what was sent.
            message = {"raw": text}
            meta["unparsed"] = True
            line = json.dumps({**message, "_ahpLog": meta}, ensure_ascii=False)
    if len(line) > MAX_LINE_BYTES // 4 and len(line.encode()) > MAX_LINE_BYTES:
        if message is None:
            message = redact(json.loads(text))
        line = json.dumps({**_cut(message), "_ahpLog": {**meta, "truncated": True}})
    return line


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler whose files are 0600 and never opened through a link or a pipe."""

    def _open(self) -> IO[str]:
        fd = os.open(
            self.baseFilename,
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            0o600,
        )
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise WireCaptureError(f"{self.baseFilename} is not a regular file")
            os.fchmod(fd, 0o600)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return open(fd, "a", encoding="utf-8", closefd=True)


class WireCapture:
    """Appends each frame's line to the capture's file, rolling it over as it grows."""

    def __init__(self, path: Path, max_bytes: int = MAX_FILE_BYTES, backups: int = BACKUPS) -> None:
        self.path = path
        try:
            self._file = _PrivateRotatingFile(
                str(path), maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
            )
        except OSError as exc:
            reason = {
                errno.ELOOP: "it is a link",
                errno.ENXIO: "it is not a regular file",
            }.get(exc.errno or 0, exc.strerror or str(exc))
            raise WireCaptureError(f"the wire capture cannot write {path}: {reason}") from None
        except WireCaptureError as exc:
            raise WireCaptureError(f"the wire capture cannot write {exc}") from None
        self._file.setFormatter(logging.Formatter("%(message)s"))

    def record(self, direction: str, text: str, connection_id: str) -> None:
        line = line_for(direction, text, connection_id)
        self._file.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

    def close(self) -> None:
        self._file.close()


#: The running server's capture, when one was asked for (set by `manage.py serve`).
capture: WireCapture | None = None


def start(path: Path) -> WireCapture:
    """Start capturing to `path` (made absolute). Raises WireCaptureError naming why not."""
    global capture
    path = path.expanduser().absolute()
    if not path.parent.is_dir():
        raise WireCaptureError(f"the wire capture's folder does not exist: {path.parent}")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise WireCaptureError(f"the wire capture cannot write {path}: it is not a regular file")
    capture = WireCapture(path)
    return capture


def stop() -> None:
    global capture
    if capture is not None:
        capture.close()
        capture = None
