"""The start's refusals say what is wrong in one line, with no password in it."""

from __future__ import annotations

import errno
import socket

from hosts.edge.preflight import _reason, listen_refusal, shown_url


def test_a_url_is_shown_without_its_password():
    assert shown_url("postgres://ahpd:hunter2@db:5432/x") == "postgres://ahpd:***@db:5432/x"
    assert shown_url("redis://:hunter2@127.0.0.1:6379/2") == "redis://:***@127.0.0.1:6379/2"
    assert shown_url("postgres://ahpd@db/x") == "postgres://ahpd@db/x"


def test_a_drivers_account_comes_down_to_its_last_clause():
    error = OSError(
        'connection failed: connection to server at "127.0.0.1", port 1 failed: '
        "Connection refused\n\tIs the server running on that host?"
    )
    assert _reason(error) == "Connection refused"


def test_a_listen_failure_names_the_variable_to_change():
    in_use = OSError(errno.EADDRINUSE, "Address already in use")
    assert (
        listen_refusal("127.0.0.1", 9187, in_use) == "port 9187 on 127.0.0.1 is in use (AHPD_PORT)"
    )
    denied = OSError(errno.EACCES, "Permission denied")
    assert "(AHPD_PORT)" in listen_refusal("0.0.0.0", 80, denied)
    absent = OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
    assert listen_refusal("192.0.2.1", 9187, absent).endswith("(AHPD_HOST)")
    unknown = socket.gaierror(-2, "Name or service not known")
    assert "Name or service not known (AHPD_HOST)" in listen_refusal("nowhere.invalid", 1, unknown)
