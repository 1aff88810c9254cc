"""Errors under /api/ are JSON, `{"detail": "..."}`, wherever they are raised.

Inside a DRF view, DRF's exception handler answers (a refusal, a 404, a 405); a body that
fails validation names its fields instead (`{"name": ["..."]}`). What happens before any view
is found, or escapes one, is answered by Django's error handlers, which ahpsite/urls.py names:
these, which say it in JSON under /api/ and leave every other path to Django's own pages.
Django's debug pages (AHPD_DEBUG=1) stand in for the handlers, as Django does everywhere.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import serializers

from .trailing_slash import API_PREFIX


class ErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What every refusal under /api/ says."""

    detail = serializers.CharField(help_text="what was wrong, in words")


def under_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX) or request.path == API_PREFIX.rstrip("/")


def _said(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if under_api(request):
        return _said(400, "Bad request.")
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if under_api(request):
        return _said(403, "You may not do this here.")
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if under_api(request):
        return _said(404, f"Nothing is at {request.path}: see /api/schema/ for what is.")
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if under_api(request):
        return _said(500, "The server failed to answer; what went wrong is in its log.")
    return defaults.server_error(request)
