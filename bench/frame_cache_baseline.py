"""The baseline for bench/frame_cache.py: the encoded-frame cache as it was before it was
bounded by bytes (hosts/edge/daphne_wire.py until then): the last 256 frames by count,
whatever they weigh, all let go at once when the 257th comes."""

from __future__ import annotations

from hosts.edge.daphne_wire import frame_header


class CountBoundFrames:
    def __init__(self, size: int = 256) -> None:
        self._cache: dict[int, tuple[str, bytes]] = {}
        self._size = size

    def frame(self, text: str) -> bytes:
        hit = self._cache.get(id(text))
        if hit is not None and hit[0] is text:
            return hit[1]
        payload = text.encode()
        data = frame_header(len(payload)) + payload
        if len(self._cache) >= self._size:
            self._cache.clear()
        self._cache[id(text)] = (text, data)
        return data
