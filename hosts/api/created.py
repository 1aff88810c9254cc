"""A 201 says where what it made is: `Location`, the made resource's absolute URL."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response


def created(request: Request, data: Any, path: str) -> Response:
    """201 with `data`, and `Location` the URL of `path` (an /api/ path) on the host asked."""
    location = request.build_absolute_uri(path)
    return Response(data, status=status.HTTP_201_CREATED, headers={"Location": location})
