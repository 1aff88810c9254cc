"""The admin's dates in the admin user's own time zone: their browser's, which every admin page
(ahpsite/templates/admin/base_site.html) keeps in the `ahpd_tz` cookie, so that the pages after
the first one (the sign-in page) are in it; a zone this host cannot read, or none yet, leaves
the server's (TIME_ZONE, UTC). Django shows every
date field in the zone activated here; the engine's times (epoch milliseconds and ISO strings
in UTC) are shown through `local_ms` and `local_iso`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.formats import date_format

#: The cookie the admin's pages keep the browser's zone in (an IANA name).
COOKIE = "ahpd_tz"


def zone_named(name: str | None) -> ZoneInfo | None:
    """The IANA zone `name` names, or None for none this host knows (or no name)."""
    if not name or len(name) > 64 or name.startswith(("/", ".")) or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


class BrowserTimeZone:
    """Activates the zone of the admin user's browser for the admin's pages."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        zone = zone_named(unquote(request.COOKIES.get(COOKIE, "")))
        if zone is None:
            timezone.deactivate()
        else:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def local(moment: datetime | None) -> str:
    """A moment as the admin shows its dates, in the active zone; "-" for none."""
    if moment is None:
        return "-"
    return date_format(timezone.localtime(moment), "DATETIME_FORMAT")


def local_ms(ms: int | None) -> str:
    """Epoch milliseconds (the engine's times) as the admin shows dates."""
    if ms is None:
        return "-"
    return local(datetime.fromtimestamp(ms / 1000, UTC))


def local_iso(text: str | None) -> str:
    """An ISO 8601 time (a turn's startedAt) as the admin shows dates; as written if it is
    none."""
    if not text:
        return "-"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return local(moment)
