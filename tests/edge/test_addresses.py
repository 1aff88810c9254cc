"""The URL clients are told: the public one when the operator gives it, else the bound one."""

from __future__ import annotations

from hosts.edge.addresses import public_base, vscode_address, with_token


def test_the_bound_address_is_told_with_a_wildcard_shown_as_loopback(settings):
    settings.AHPD_PUBLIC_URL = None
    assert public_base("127.0.0.1", 9187) == "ws://127.0.0.1:9187/"
    assert public_base("0.0.0.0", 9187) == "ws://127.0.0.1:9187/"
    assert public_base("::1", 4000) == "ws://[::1]:4000/"


def test_the_public_url_wins_wherever_the_server_listens(settings):
    settings.AHPD_PUBLIC_URL = "wss://ahpd.example.com"
    assert public_base("0.0.0.0", 9187) == "wss://ahpd.example.com/"
    assert with_token(public_base(), "a b/c") == "wss://ahpd.example.com/?tkn=a%20b%2Fc"
    assert vscode_address(public_base()) == "ahpd.example.com"


def test_no_token_is_the_bare_url(settings):
    settings.AHPD_PUBLIC_URL = None
    assert with_token(public_base("127.0.0.1", 1), None) == "ws://127.0.0.1:1/"
