"""CSV export for the admin's lists: an action for the rows ticked, and a link beside the list
for every row its filters keep. Written with Python's csv module and streamed
(StreamingHttpResponse over an asynchronous iterator, so daphne sends each chunk as it is
read rather than gathering the whole file first), a thousand rows a query, in primary-key
order; dates in ISO 8601 in the admin user's zone (hosts/admin_dates.py)."""

from __future__ import annotations

import csv
from collections.abc import AsyncIterator, Callable
from datetime import date, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone

#: Rows read per query.
CHUNK = 1000


class _Line:
    """What csv.writer writes to: hands back the line it was given."""

    def write(self, text: str) -> str:
        return text


def cell(value: Any) -> Any:
    """A value as the CSV file says it."""
    if isinstance(value, datetime):
        return timezone.localtime(value).isoformat() if timezone.is_aware(value) else value
    if isinstance(value, date):
        return value.isoformat()
    if value is None:
        return ""
    if isinstance(value, Model):
        return str(value.pk)
    return value


def _chunk(queryset: QuerySet[Any], after: Any, row: Callable[[Any], list[Any]]) -> list[Any]:
    page = (
        list(queryset.filter(pk__gt=after)[:CHUNK]) if after is not None else list(queryset[:CHUNK])
    )
    return [(obj.pk, [cell(value) for value in row(obj)]) for obj in page]


def csv_response(
    queryset: QuerySet[Any], header: list[str], row: Callable[[Any], list[Any]], name: str
) -> StreamingHttpResponse:
    """The rows of `queryset`, each `row(obj)`, as a CSV file `name` streamed to the browser.
    Read in the active time zone of the request that asked (it is kept for the stream)."""
    zone = timezone.get_current_timezone()
    ordered = queryset.order_by("pk")
    writer = csv.writer(_Line())

    def read(after: Any) -> list[Any]:
        with timezone.override(zone):
            return _chunk(ordered, after, row)

    async def lines() -> AsyncIterator[str]:
        yield writer.writerow(header)
        after = None
        while True:
            page = await sync_to_async(read)(after)
            if not page:
                return
            for _key, values in page:
                yield writer.writerow(values)
            after = page[-1][0]

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = "no-store"
    return response


class CsvExport:
    """Mixed into a ModelAdmin: `csv_fields` (model fields or the admin's own methods, each
    taking the object) as columns; the action "Export the selected as CSV" and the list's link
    "Export as CSV" (every row its filters and search keep)."""

    csv_fields: tuple[str, ...] = ()
    change_list_template = "admin/change_list_csv.html"
    admin_site: Any
    opts: Any

    def _csv_name(self) -> str:
        return f"{self.opts.model_name}s-{timezone.localdate().isoformat()}.csv"

    def _csv_row(self, obj: Any) -> list[Any]:
        values = []
        for name in self.csv_fields:
            method = getattr(self, f"csv_{name}", None)
            values.append(method(obj) if method is not None else getattr(obj, name))
        return values

    def csv_of(self, queryset: QuerySet[Any]) -> StreamingHttpResponse:
        return csv_response(queryset, list(self.csv_fields), self._csv_row, self._csv_name())

    @admin.action(description="Export the selected as CSV")
    def export_csv(self, request: HttpRequest, queryset: QuerySet[Any]) -> StreamingHttpResponse:
        return self.csv_of(queryset)

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_csv"
        view = self.admin_site.admin_view(self.export_view)
        return [path("export.csv", view, name=name), *super().get_urls()]  # type: ignore[misc]

    def export_view(self, request: HttpRequest) -> StreamingHttpResponse:
        """Every row the list shows with the same filters and search (the query string's)."""
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        changelist = self.get_changelist_instance(request)  # type: ignore[attr-defined]
        return self.csv_of(changelist.get_queryset(request))

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        context = dict(extra_context or {})
        context["csv_url"] = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_csv")
        return super().changelist_view(request, context)  # type: ignore[misc]
