"""The pages a browser reads from a running server: the admin's and the API's static files,
the API's documentation pages, and the browsable API signed in through the admin site."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

import pytest

from tests.support.server import REPO, ServerProcess


@pytest.fixture(scope="module")
def server():
    process = ServerProcess().start()
    for person, role in (("ana", "admin"), ("max", "member")):
        subprocess.run(
            [sys.executable, "manage.py", "ahpd", "user", "add", person, "--role", role],
            cwd=REPO,
            env=process.env(),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                "from django.contrib.auth import get_user_model as m; "
                f"u = m().objects.get(username='{person}'); u.set_password('pw-{person}-1');"
                " u.save()",
            ],
            cwd=REPO,
            env=process.env(),
            check=True,
            capture_output=True,
        )
    yield process
    process.close()


def http(server: ServerProcess) -> str:
    return f"http://127.0.0.1:{server.port}"


def get(
    url: str, opener: urllib.request.OpenerDirector | None = None, accept: str = "*/*"
) -> tuple[int, str, bytes]:
    """Status, content type and body of a GET (an error status answered, not raised)."""
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def test_the_admins_stylesheet_is_served(server):
    status, kind, body = get(http(server) + "/static/admin/css/base.css")
    assert (status, kind.split(";")[0]) == (200, "text/css")
    assert b"body" in body


def test_the_browsable_apis_stylesheet_is_served(server):
    status, kind, _ = get(http(server) + "/static/rest_framework/css/bootstrap.min.css")
    assert (status, kind.split(";")[0]) == (200, "text/css")


def test_a_missing_static_file_is_404(server):
    assert get(http(server) + "/static/admin/css/no-such.css")[0] == 404


def test_the_favicon_every_admin_page_asks_for_is_served_and_logs_no_warning(server):
    status, kind, body = get(http(server) + "/favicon.ico")
    assert (status, kind) == (200, "image/x-icon")
    assert body[:4] == b"\x00\x00\x01\x00" and b"PNG" in body  # an icon, holding a PNG
    assert get(http(server) + "/static/ahpd/favicon.ico")[2] == body
    # A page that is not there is logged as a warning, after the favicon's request: once its
    # line is read, the favicon's would have been.
    assert get(http(server) + "/no-such-page-asked-after-the-icon")[0] == 404
    assert server.wait_output(lambda line: "/no-such-page-asked-after-the-icon" in line)
    assert not [line for line in server.output if "/favicon.ico" in line]


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_the_api_pages_render_with_their_assets_from_this_host(server, page):
    status, kind, body = get(http(server) + page)
    assert (status, kind.split(";")[0]) == (200, "text/html")
    html = body.decode()
    assert "/api/schema/" in html
    scripts = re.findall(r'src="([^"]+\.js)"', html)
    assert scripts, html
    for script in scripts:
        # No CDN: every script the page loads is this host's, and it is there.
        assert script.startswith("/static/drf_spectacular_sidecar/"), script
        assert get(http(server) + script)[0] == 200, script


def signed_in(
    server: ServerProcess, person: str, page: str = "/admin/"
) -> tuple[urllib.request.OpenerDirector, str]:
    """A browser's cookie jar signed in as `person` through the sign-in form of `page` (the
    admin site's, or the browsable API's), and its CSRF token."""
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    form_page = "/admin/login/" if page == "/admin/" else "/api/auth/login/"
    login = http(server) + f"{form_page}?next={page}"
    form = opener.open(login, timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf
    data = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": csrf.group(1), "username": person, "password": f"pw-{person}-1"}
    ).encode()
    request = urllib.request.Request(login, data=data, headers={"Referer": login})
    with opener.open(request, timeout=30) as response:
        assert response.url.endswith(page), response.url
    cookie = next(c.value for c in jar if c.name == "csrftoken")
    return opener, cookie


def test_the_browsable_api_takes_the_admin_sites_sign_in(server):
    opener, _ = signed_in(server, "ana")
    status, kind, body = get(http(server) + "/api/people/?format=json", opener)
    assert status == 200, body
    assert b'"ana"' in body
    status, kind, body = get(http(server) + "/api/people/", opener, accept="text/html")
    assert (status, kind.split(";")[0]) == (200, "text/html")
    assert b"/static/rest_framework/" in body


def test_a_signed_in_person_browses_with_their_own_grants(server):
    opener, _ = signed_in(server, "max", "/api/status/")
    status, _, body = get(http(server) + "/api/people/?format=json", opener)
    assert status == 403
    assert b"user:max may not user:read here" in body
    assert get(http(server) + "/api/status/?format=json", opener)[0] == 200


def post_team(opener: urllib.request.OpenerDirector, url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=b'{"slug": "core"}',
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with opener.open(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_an_unsafe_method_signed_by_the_cookie_needs_the_csrf_token(server):
    opener, csrf = signed_in(server, "ana")
    url = http(server) + "/api/teams/"
    assert post_team(opener, url, {}) == 403
    assert post_team(opener, url, {"X-CSRFToken": csrf, "Referer": url}) == 201


def test_no_sign_in_is_still_a_bearer_challenge(server):
    status, _, body = get(http(server) + "/api/people/?format=json")
    assert status == 401
