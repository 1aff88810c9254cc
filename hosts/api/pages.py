"""Every list under /api/ comes in pages: `{"count", "next", "previous", "results"}`.

`?limit=` rows from `?offset=`; `next` and `previous` are the URLs of the pages beside (null at
either end), so a client follows `next` until it is null (as `manage.py ahpd sessions` does,
hosts/management/ahpd/server.py). Rows are in each list's own order, the same on every page.
"""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

#: Rows in a page when `limit` is not given.
DEFAULT_LIMIT = 100
#: The most rows a page holds: a larger `limit` is taken as this.
MAX_LIMIT = 1000


class Pages(LimitOffsetPagination):
    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT
