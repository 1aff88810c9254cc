"""A turn's request, and what its message's attachments hold, found before the turn runs.

A resource attachment naming a `file:` inside the served folders is read by the host (up to
the fetch limit, off the event loop); an embedded one is decoded; a simple one carries what
its producer says the model should read. An image is kept as bytes for agents that take images,
text as text. What the host has no copy of (another scheme, a file too big, outside the fence,
gone) is left as sent: the backend names it by label and URI. The message itself, attachments
included, is kept with the turn as the client sent it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import replace
from stat import S_ISREG
from typing import Any

from ...backends.base import Attachment, TurnRequest
from ...backends.fence_walk import NotRegular, Outside, read_regular, walk
from ...protocol.errors import ProtocolError
from ..client_requests import ClientRequests, client_uri
from ..resources.files import content_type
from ..resources.served import Served

log = logging.getLogger("ahpd.engine")

#: A file attached is fetched up to this many bytes (the reference's attachmentFetchLimitBytes).
FETCH_LIMIT = 32 * 1024 * 1024


def turn_request(turn_id: str, text: str, action: Mapping[str, Any]) -> TurnRequest:
    """What a backend is asked for a client's turn: its text, model and attachments."""
    message = action.get("message") or {}
    model = message.get("model")
    sent = message.get("attachments")
    meta = message.get("_meta")
    sender = meta.get("ahpd.sender") if isinstance(meta, Mapping) else None
    return TurnRequest(
        turn_id,
        text,
        str(model["id"]) if isinstance(model, dict) and isinstance(model.get("id"), str) else None,
        tuple(a for a in sent if isinstance(a, Mapping)) if isinstance(sent, list) else (),
        sender=sender if isinstance(sender, str) else None,
    )


class Attachments:
    """Finds a request's attachments, inside the fence."""

    def __init__(self, served: Served, asks: ClientRequests, limit: int = FETCH_LIMIT) -> None:
        self._served = served
        self._asks = asks
        self._limit = limit

    async def found(self, request: TurnRequest) -> TurnRequest:
        if not request.sent:
            return request
        found = await asyncio.to_thread(lambda: [self._one(a) for a in request.sent])
        for at, (sent, attachment) in enumerate(zip(request.sent, found, strict=True)):
            size = sent.get("sizeHint")
            too_big = isinstance(size, int | float) and size > self._limit
            if attachment is not None and not too_big and client_uri(attachment.uri or ""):
                found[at] = await self._from_client(attachment, request.sender)
        return replace(request, attachments=tuple(a for a in found if a is not None))

    async def _from_client(self, attachment: Attachment, sender: str | None) -> Attachment:
        """A file the sender's own client holds, asked of it; left as sent otherwise."""
        named = client_uri(attachment.uri or "")
        if named is None or sender is None:
            return attachment
        params = {"channel": "ahp-root://", "uri": named[1], "encoding": "base64"}
        try:
            answer = await self._asks.ask(sender, attachment.uri or "", "resourceRead", params)
            if not isinstance(answer, dict):
                return attachment
            raw = str(answer.get("data", ""))
            utf8 = answer.get("encoding") == "utf-8"
            data = raw.encode() if utf8 else base64.b64decode(raw, validate=True)
        except (ProtocolError, binascii.Error, ValueError) as error:
            log.info("attachment %s left as sent: %s", attachment.uri, error)
            return attachment
        mime = attachment.mime or answer.get("contentType")
        return self._content(attachment.label, attachment.uri, data, mime)

    def _one(self, sent: Mapping[str, Any]) -> Attachment | None:
        label = str(sent.get("label") or "attachment")
        kind = sent.get("type")
        if kind == "simple":
            text = sent.get("modelRepresentation")
            return Attachment(label, text=text) if isinstance(text, str) and text else None
        if kind == "embeddedResource":
            try:
                data = base64.b64decode(str(sent.get("data", "")), validate=True)
            except (binascii.Error, ValueError):
                return Attachment(label)
            return self._content(label, None, data, sent.get("contentType"))
        if kind != "resource" or not isinstance(sent.get("uri"), str):
            return None  # annotations and chats are this host's to resolve later
        uri = sent["uri"]
        left_as_sent = Attachment(label, uri)
        if not uri.startswith("file:"):
            # A client's own is asked of it (`found`) unless it says it is too big; any other
            # scheme is left as sent.
            kind = sent.get("contentType")
            return replace(left_as_sent, mime=kind if isinstance(kind, str) and kind else None)
        try:
            # Walked inside the fence and read through what the walk opened; only a regular
            # file, opened without waiting (a named pipe attached holds up no turn).
            with walk(self._served.named(uri, "attachment"), self._served.holds) as place:
                found = place.found
                if found is None or not S_ISREG(found.st_mode) or found.st_size > self._limit:
                    return left_as_sent
                data = read_regular(place, self._limit + 1)
        except (ProtocolError, Outside, NotRegular, OSError) as error:
            log.info("attachment %s left as sent: %s", uri, error)
            return left_as_sent
        guess = sent.get("contentType") or content_type(place.real)
        return self._content(label, uri, data, guess)

    def _content(self, label: str, uri: str | None, data: bytes, mime: Any) -> Attachment:
        mime = mime if isinstance(mime, str) and mime else None
        if len(data) > self._limit:
            return Attachment(label, uri, mime=mime)
        if mime is not None and mime.startswith("image/"):
            return Attachment(label, uri, image=data, mime=mime)
        try:
            return Attachment(label, uri, text=data.decode("utf-8"), mime=mime)
        except UnicodeDecodeError:
            return Attachment(label, uri, mime=mime)
