"""The upgrade's Origin and Host rules, as pure functions."""

from __future__ import annotations

import pytest

from hosts.edge.origins import is_loopback, parse_allowed, refusal, split_host, web_origin

ALLOWED = parse_allowed("https://app.example/, http://Tools.example:8080")


def test_allowed_origins_are_kept_with_their_port_explicit():
    assert ALLOWED == {("https", "app.example", 443), ("http", "tools.example", 8080)}


@pytest.mark.parametrize(
    "raw", ["app.example", "vscode-file://vscode-app", "https://app.example/path", "*", "null"]
)
def test_an_allowed_origin_that_is_no_web_origin_is_refused_naming_it(raw):
    with pytest.raises(ValueError, match="is not an http"):
        parse_allowed(raw)


def test_web_origins_and_the_rest():
    assert web_origin("HTTPS://Example.COM") == ("https", "example.com", 443)
    assert web_origin("http://[::1]:5173") == ("http", "::1", 5173)
    assert web_origin("vscode-webview://abc") is None
    for bad in ("null", "", "http://", "http://host:notaport", "http://user@host"):
        with pytest.raises(ValueError):
            web_origin(bad)


def test_host_headers_split_into_name_and_port():
    assert split_host("[::1]:9187") == ("::1", 9187)
    assert split_host("LocalHost") == ("localhost", None)
    with pytest.raises(ValueError):
        split_host("a/b")


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.9.9.9", "::1", "[::1]"])
def test_loopback_names(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["127.0.0.1.evil.example", "10.0.0.1", "evil.example", "::2"])
def test_not_loopback_names(host):
    assert not is_loopback(host)


@pytest.mark.parametrize(
    ("origin", "host", "loopback_only"),
    [
        (None, "any.name:1", False),
        ("vscode-file://vscode-app", "any.name", False),
        ("http://ahpd.example:9187", "ahpd.example:9187", False),
        ("https://ahpd.example", "ahpd.example", False),
        ("http://localhost:3000", "ahpd.example:9187", False),
        ("https://app.example", "ahpd.example", False),
        (None, "127.0.0.1:9187", True),
        ("http://127.0.0.1:9187", "127.0.0.1:9187", True),
        ("vscode-file://vscode-app", "[::1]:9187", True),
    ],
)
def test_admitted(origin, host, loopback_only):
    assert refusal(origin, host, allowed=ALLOWED, loopback_only=loopback_only) is None


@pytest.mark.parametrize(
    ("origin", "host", "loopback_only", "named"),
    [
        ("http://evil.example", "127.0.0.1:9187", False, "http://evil.example"),
        ("null", "127.0.0.1:9187", False, "null"),
        ("http://ahpd.example:9187", "ahpd.example:9188", False, "http://ahpd.example:9187"),
        ("http://app.example", "127.0.0.1", False, "http://app.example"),
        (None, "evil.example:9187", True, "evil.example:9187"),
        (None, None, True, "None"),
        (None, "127.0.0.1.evil.example", True, "127.0.0.1.evil.example"),
    ],
)
def test_refused_naming_what(origin, host, loopback_only, named):
    reason = refusal(origin, host, allowed=ALLOWED, loopback_only=loopback_only)
    assert reason is not None and named in reason
