"""Every list under /api/ comes in pages: `{"count", "next", "previous", "results"}`.

`?limit=` rows from `?offset=`; `next` and `previous` are the URLs of the pages beside (null at
either end), so a client follows `next` until it is null (as `manage.py ahpd sessions` does,
hosts/management/ahpd/server.py). Rows are in each list's own order, the same on every page.
A list's query is checked here, before anything is counted (query_parameters.py): a parameter
it does not take, or a `limit` or `offset` that is not a whole number, is refused 400.

A generic list view is paged by DRF (DEFAULT_PAGINATION_CLASS); a view that reads its rows
another way (the engine's, a policy's) answers `paged(request, view, rows)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from . import query_parameters

#: Rows in a page when `limit` is not given.
DEFAULT_LIMIT = 100
#: The most rows a page holds: a larger `limit` is taken as this.
MAX_LIMIT = 1000


#: The pages' parameters, for the schema of a list a view pages itself (`paged`); a generic
#: list's are said by drf-spectacular from the pagination class.
PAGE_PARAMETERS = [
    OpenApiParameter(name, int, description=takes) for name, takes in query_parameters.PAGES.items()
]


class Pages(LimitOffsetPagination):
    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT

    def paginate_queryset(
        self, queryset: QuerySet[Any] | Sequence[Any], request: Request, view: Any = None
    ) -> list[Any] | None:
        query_parameters.check(request, view)
        return super().paginate_queryset(queryset, request, view)

    def get_limit(self, request: Request) -> int:
        asked = request.query_params.get(self.limit_query_param)
        if asked is None:
            return int(self.default_limit)
        return min(query_parameters.whole(self.limit_query_param, asked, 1), int(self.max_limit))

    def get_offset(self, request: Request) -> int:
        asked = request.query_params.get(self.offset_query_param)
        if asked is None:
            return 0
        return query_parameters.whole(self.offset_query_param, asked, 0)


def paged(
    request: Request,
    view: Any,
    rows: QuerySet[Any] | Sequence[Any],
    shown: Callable[[Any], Any] = lambda row: row,
) -> Response:
    """`rows`, in the list's own order, answered in pages, each row of a page `shown` as JSON."""
    pages = Pages()
    page = pages.paginate_queryset(rows, request, view=view) or []
    return pages.get_paginated_response([shown(row) for row in page])
