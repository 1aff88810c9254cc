"""An attachment's text as a model reads it inline: named, and fenced off from the message."""

from __future__ import annotations

from hosts.backends.base import Attachment


def inlined(attachment: Attachment) -> str:
    """The attachment as text: its content, or, where the host has none, what it is."""
    if attachment.text is None:
        where = f" ({attachment.uri})" if attachment.uri else ""
        return f"[attached: {attachment.label}{where}, not read by the host]"
    uri = f' uri="{attachment.uri}"' if attachment.uri else ""
    return f'<attachment name="{attachment.label}"{uri}>\n{attachment.text}\n</attachment>'
