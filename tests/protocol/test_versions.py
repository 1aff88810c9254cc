"""Version negotiation: the highest offer in a caret range of a supported baseline, or none."""

from __future__ import annotations

import pytest

from hosts.protocol.versions import (
    SUPPORTED_VERSIONS,
    VersionFormatError,
    in_caret_range,
    negotiate,
    parse_version,
)


@pytest.mark.parametrize(
    ("offered", "baseline", "inside"),
    [
        ("1.0.0", "1.0.0", True),
        ("1.9.9", "1.0.0", True),
        ("2.0.0", "1.0.0", False),
        ("0.9.0", "0.9.0", True),
        ("0.9.7", "0.9.0", True),
        ("0.8.9", "0.9.0", False),
        ("0.10.0", "0.9.0", False),
        # A 0.x baseline holds the major as well as the minor: 9.9.9 is not ^0.9.0.
        ("9.9.9", "0.9.0", False),
        ("1.9.0", "0.9.0", False),
        ("0.0.3", "0.0.3", True),
        ("0.0.4", "0.0.3", False),
        ("1.0.3", "0.0.3", False),
    ],
)
def test_a_caret_range_holds_everything_up_to_the_baselines_first_non_zero_part(
    offered: str, baseline: str, inside: bool
) -> None:
    assert in_caret_range(parse_version(offered), parse_version(baseline)) is inside


def test_negotiation_picks_the_highest_compatible_offer_whatever_the_order() -> None:
    assert negotiate(["0.9.0", "0.10.0", "1.0.0"]) == ("1.0.0", (1, 0, 0))
    assert negotiate(["1.0.0", "1.4.2", "0.9.0"]) == ("1.4.2", (1, 4, 2))
    assert negotiate(["0.10.2"]) == ("0.10.2", (0, 10, 2))
    assert negotiate(["0.9.5", "0.9.1"]) == ("0.9.5", (0, 9, 5))


@pytest.mark.parametrize(
    "offered",
    [["9.9.9"], ["9.10.0"], ["10.9.0"], ["2.0.0"], ["0.11.0", "0.8.0"], ["0.0.9"]],
)
def test_an_offer_in_no_baselines_range_is_not_negotiated(offered: list[str]) -> None:
    assert negotiate(offered) is None


def test_an_incompatible_entry_beside_a_compatible_one_is_passed_over() -> None:
    assert negotiate(["9.9.9", "0.9.0"]) == ("0.9.0", (0, 9, 0))


def test_every_supported_version_negotiates_to_itself() -> None:
    for version in SUPPORTED_VERSIONS:
        assert negotiate([version]) == (version, parse_version(version))


def test_a_malformed_entry_is_reported_even_beside_a_good_one() -> None:
    with pytest.raises(VersionFormatError):
        negotiate(["1.0.0", "v1"])
