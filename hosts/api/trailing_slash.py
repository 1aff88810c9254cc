"""Every API path answers with or without its trailing slash, the same way, without a redirect.

The routes are written the way Django REST framework writes them, with a trailing slash: that
is what the schema lists and reverse() gives. A client that leaves the slash off is answered
too, by the same view: a redirect to the slashed path would lose a POST's body, and Django's
APPEND_SLASH refuses to redirect a POST at all in DEBUG.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.deprecation import MiddlewareMixin

#: Where every app's API is mounted (ahpsite/urls.py).
API_PREFIX = "/api/"


class OptionalTrailingSlash(MiddlewareMixin):
    """Route `/api/x` as `/api/x/`. Runs before CommonMiddleware, which then finds the route."""

    def process_request(self, request: HttpRequest) -> None:
        under = request.path_info.startswith(API_PREFIX) or request.path_info == API_PREFIX[:-1]
        if under and not request.path_info.endswith("/"):
            request.path_info += "/"
            request.path += "/"
