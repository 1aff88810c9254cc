"""The person's message as the CLI takes it on stdin: a user message of content blocks.

Text attachments are inlined after the message (named, fenced off), an image goes as a
Messages API `image` block with its bytes, and what the host has no copy of is named by label
and URI. A conversation the CLI has no record of (a new session for a chat with kept turns)
gets those turns first, once, as the ACP backend hands them.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from hosts.backends.base import TurnRequest
from hosts.backends.inline import inlined

#: The image types the Messages API takes.
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def user_message(request: TurnRequest, earlier: str | None = None) -> dict[str, Any]:
    """The SDK's stream-json user message for one turn."""
    texts = [request.text]
    images: list[dict[str, Any]] = []
    for attachment in request.attachments:
        if attachment.image is not None and attachment.mime in IMAGE_TYPES:
            data = base64.b64encode(attachment.image).decode()
            images.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": attachment.mime, "data": data},
                }
            )
        else:
            texts.append(inlined(attachment))
    blocks: list[dict[str, Any]] = []
    if earlier is not None:
        blocks.append({"type": "text", "text": earlier})
    blocks += images
    blocks.append({"type": "text", "text": "\n\n".join(texts)})
    return {
        "type": "user",
        "message": {"role": "user", "content": blocks},
        "parent_tool_use_id": None,
        # A new uuid per message: the CLI skips one whose uuid it has seen.
        "uuid": str(uuid.uuid4()),
    }
