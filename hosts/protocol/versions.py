"""Protocol versions this host speaks, and how an offer is negotiated."""

from __future__ import annotations

import re
from collections.abc import Sequence

Version = tuple[int, int, int]

#: Versions a refusal lists, newest first. 0.10.0 is VS Code 1.141's, which reads the 1.0.0 wire.
SUPPORTED_VERSIONS: tuple[str, ...] = ("1.0.0", "0.10.0", "0.9.0")

# MAJOR.MINOR.PATCH with no leading zeros, no pre-release and no build metadata.
_SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


class VersionFormatError(ValueError):
    """An offered entry is not a MAJOR.MINOR.PATCH version."""

    def __init__(self, entry: object) -> None:
        super().__init__(f"Not a MAJOR.MINOR.PATCH protocol version: {entry!r}")
        self.entry = entry


def parse_version(text: object) -> Version:
    """Parse a strict SemVer core version, raising VersionFormatError otherwise."""
    if not isinstance(text, str):
        raise VersionFormatError(text)
    match = _SEMVER.fullmatch(text)
    if match is None:
        raise VersionFormatError(text)
    return (int(match[1]), int(match[2]), int(match[3]))


def in_caret_range(offered: Version, baseline: Version) -> bool:
    """Whether `offered` lies in the caret range `^baseline`, as the specification's
    negotiation reads a baseline: not older, and the same up to the baseline's first non-zero
    part (`^1.0.0` is >=1.0.0 <2.0.0, `^0.9.0` is >=0.9.0 <0.10.0, `^0.0.3` is 0.0.3 only)."""
    if offered < baseline:
        return False
    if baseline[0] > 0:
        return offered[0] == baseline[0]
    if baseline[1] > 0:
        return offered[:2] == baseline[:2]
    return offered == baseline


_BASELINES: tuple[Version, ...] = tuple(parse_version(v) for v in SUPPORTED_VERSIONS)


def negotiate(offered: Sequence[object]) -> tuple[str, Version] | None:
    """Pick the highest offered version this host speaks.

    Every entry is parsed first, so a malformed one is reported even when another would match.
    Returns the offered string (which the result must echo exactly) and its parsed form, or
    None when nothing offered is compatible with a supported baseline.
    """
    parsed = [(entry, parse_version(entry)) for entry in offered]
    best: tuple[str, Version] | None = None
    for entry, version in parsed:
        if not any(in_caret_range(version, baseline) for baseline in _BASELINES):
            continue
        if best is None or version > best[1]:
            assert isinstance(entry, str)
            best = (entry, version)
    return best
