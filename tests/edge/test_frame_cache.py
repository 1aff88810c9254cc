"""The encoded-frame cache: each frame encoded once per pass, and what it holds bounded."""

from __future__ import annotations

import asyncio

from hosts.edge.daphne_wire import EncodedFrames, frame_header

MIB = 1024 * 1024


def text_of(size: int, tag: int) -> str:
    return f'{{"n":{tag},"pad":"{"x" * size}"}}'


def test_a_frame_is_encoded_once_for_every_subscriber_of_a_pass():
    frames = EncodedFrames()
    text = text_of(100, 1)
    first = frames.frame(text)
    assert first == frame_header(len(text)) + text.encode()
    assert all(frames.frame(text) is first for _ in range(100))


def test_what_the_cache_holds_stays_within_its_bound_however_many_big_answers_pass():
    frames = EncodedFrames(max_bytes=4 * MIB, max_count=256)
    # 300 answers of 1 MiB: a count-bounded cache held 256 of them (512 MiB with their texts).
    for tag in range(300):
        frames.frame(text_of(MIB, tag))
        assert frames.held_bytes <= 4 * MIB
    recent = text_of(100, 999)
    kept = frames.frame(recent)
    assert frames.frame(recent) is kept


async def test_a_frame_past_the_bound_is_held_for_its_pass_and_then_let_go():
    frames = EncodedFrames(max_bytes=MIB)
    big = text_of(2 * MIB, 1)
    data = frames.frame(big)
    # Said to every watcher in the same pass: encoded once.
    assert frames.frame(big) is data
    assert frames.held_bytes > MIB
    await asyncio.sleep(0)
    assert frames.held_bytes == 0
    assert frames.frame(big) == data
