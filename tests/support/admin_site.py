"""The admin site over a real socket: an admin person with a password (`boss`), and a browser
(a cookie jar) signed in as them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

from tests.support.server import REPO, ServerProcess

BOSS = "boss"
BOSS_PASSWORD = "pw-boss-1"


def add_boss(server: ServerProcess) -> None:
    """`boss`, an admin of the host, with a password to sign in to the admin site with."""
    subprocess.run(
        [sys.executable, "manage.py", "ahpd", "user", "add", BOSS, "--role", "admin", "--json"],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    server.shell(
        "from django.contrib.auth import get_user_model as m; "
        f"u = m().objects.get(username={json.dumps(BOSS)}); "
        f"u.set_password({json.dumps(BOSS_PASSWORD)}); u.save()"
    )


def admin_signed_in(server: ServerProcess) -> tuple[urllib.request.OpenerDirector, str]:
    """A browser signed in to the admin site as `boss`, and its CSRF token."""
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login = f"http://127.0.0.1:{server.port}/admin/login/?next=/admin/"
    form = opener.open(login, timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf
    data = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": csrf.group(1), "username": BOSS, "password": BOSS_PASSWORD}
    ).encode()
    with opener.open(urllib.request.Request(login, data=data, headers={"Referer": login})):
        pass
    return opener, next(c.value for c in jar if c.name == "csrftoken")
