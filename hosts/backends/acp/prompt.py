"""A message's attachments as ACP prompt content, as far as the agent said it takes them.

Every agent takes text and resource links; an image goes as an `image` block to an agent that
takes images, a text file as an embedded resource to one that takes embedded context, and
otherwise inline as text; what the host has no copy of goes as a link to its URI.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import acp

from hosts.backends.base import Attachment
from hosts.backends.inline import inlined


def attachment_blocks(attachments: Iterable[Attachment], capabilities: Any) -> list[Any]:
    images = bool(capabilities is not None and capabilities.image)
    embedded = bool(capabilities is not None and capabilities.embedded_context)
    blocks: list[Any] = []
    for attachment in attachments:
        if attachment.image is not None and images and attachment.mime:
            data = base64.b64encode(attachment.image).decode()
            blocks.append(acp.image_block(data, attachment.mime, uri=attachment.uri))
        elif attachment.text is not None and embedded and attachment.uri:
            resource = acp.embedded_text_resource(
                attachment.uri, attachment.text, mime_type=attachment.mime
            )
            blocks.append(acp.resource_block(resource))
        elif attachment.text is not None:
            blocks.append(acp.text_block(inlined(attachment)))
        elif attachment.uri:
            blocks.append(
                acp.resource_link_block(attachment.label, attachment.uri, mime_type=attachment.mime)
            )
    return blocks
