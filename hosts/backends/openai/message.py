"""The person's message as chat completions take it: text, with what was attached.

Text attachments are inlined after the message (named, fenced off); an image goes as an
`image_url` part carrying its bytes as a data URL, the OpenAI vision shape, which the content
becomes a list of parts for; what the host has no copy of is named by label and URI.
"""

from __future__ import annotations

import base64

from openai.types.chat import (
    ChatCompletionContentPartImageParam,
    ChatCompletionContentPartParam,
    ChatCompletionMessageParam,
)

from hosts.backends.base import TurnRequest
from hosts.backends.inline import inlined


def user_message(request: TurnRequest) -> ChatCompletionMessageParam:
    texts = [request.text]
    images: list[ChatCompletionContentPartImageParam] = []
    for attachment in request.attachments:
        if attachment.image is not None and attachment.mime:
            data = base64.b64encode(attachment.image).decode()
            images.append(
                {"type": "image_url", "image_url": {"url": f"data:{attachment.mime};base64,{data}"}}
            )
        else:
            texts.append(inlined(attachment))
    text = "\n\n".join(texts)
    if not images:
        return {"role": "user", "content": text}
    parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": text}, *images]
    return {"role": "user", "content": parts}
