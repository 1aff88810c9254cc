"""What a list under /api/ may be asked in its query string, checked in one place for every
app's lists: a parameter the list does not know, or a value its type does not take, is refused
400 naming the parameter and what it takes, never ignored (`?isActive=no` would otherwise list
everyone, `?limit=abc` a default page).

A list knows its filters' parameters (its view's `filterset_class`, filters.py), the pages'
`limit` and `offset` (pages.py), any its view names itself (`query_parameters`, a dict of name
to what it takes) and `format` (the browsable API's `?format=json`). Pages.paginate_queryset
calls `check` before it counts anything: every list passes through its pages, so none is left
out; StrictFilters refuses a filter's bad value in the same words.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.db.models import QuerySet
from django_filters import rest_framework as filters
from rest_framework import exceptions, status
from rest_framework.request import Request

#: What a true/false parameter takes: these two words, nothing else (not yes, 1 or on).
TRUE_FALSE = "true or false"
#: What a day parameter takes.
DAY = "a day, YYYY-MM-DD"
#: What every paged list takes beside its own (pages.py reads them).
PAGES = {
    "limit": "a whole number of rows, 1 or more",
    "offset": "a whole number of rows to skip, 0 or more",
}
#: DRF's format override, which the browsable API's links carry.
FORMAT = {"format": "json or api"}


class BadQuery(exceptions.APIException):
    """A query parameter the list does not know, or a value it does not take: 400."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "bad_query"


def refused(name: str, takes: str, value: str) -> BadQuery:
    return BadQuery(f"{name} takes {takes}, not {value!r}")


def true_false(name: str, value: str) -> bool:
    """`true` or `false`; BadQuery naming `name` for anything else."""
    if value in ("true", "false"):
        return value == "true"
    raise refused(name, TRUE_FALSE, value)


def day(name: str, value: str) -> date:
    """A YYYY-MM-DD day; BadQuery naming `name` for anything else."""
    try:
        if len(value) == 10:
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise refused(name, DAY, value)


def whole(name: str, value: str, least: int) -> int:
    """A whole number, `least` or more, written in plain digits."""
    if value.isascii() and value.isdigit() and int(value) >= least:
        return int(value)
    raise refused(name, PAGES[name] if name in PAGES else f"a whole number, {least} or more", value)


# -- the types filters take --------------------------------------------------------------------


class TrueFalseField(forms.Field):
    def to_python(self, value: Any) -> bool | None:
        if value in (None, ""):
            return None
        if value in ("true", "false"):
            return bool(value == "true")
        raise forms.ValidationError(TRUE_FALSE)


class TrueFalseFilter(filters.BooleanFilter):
    """A boolean filter that takes `true` or `false` only (django-filter's own takes anything,
    and narrows nothing where it does not understand)."""

    field_class = TrueFalseField
    takes = TRUE_FALSE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The rest_framework BooleanFilter's widget reads 1, 0 and any casing as a boolean and
        # anything else as not given: the field is to see what was sent.
        kwargs.setdefault("widget", forms.TextInput)
        super().__init__(*args, **kwargs)


def takes(flt: filters.Filter) -> str:
    """What a filter's parameter takes, in words."""
    said = getattr(flt, "takes", None)
    if said:
        return str(said)
    choices = flt.extra.get("choices")
    if choices:
        return "one of " + ", ".join(str(value) for value, _ in choices)
    return str(flt.extra.get("help_text") or "text")


# -- the check -------------------------------------------------------------------------------


def known(view: Any) -> dict[str, str]:
    """Every parameter `view`'s list takes, with what it takes."""
    parameters: dict[str, str] = {}
    filterset_class = getattr(view, "filterset_class", None)
    if filterset_class is not None:
        parameters |= {name: takes(f) for name, f in filterset_class.base_filters.items()}
    parameters |= getattr(view, "query_parameters", {})
    return parameters | PAGES | FORMAT


def check(request: Request, view: Any) -> None:
    """Refuse, 400 naming it, a parameter `view`'s list does not take."""
    parameters = known(view)
    for name in request.query_params:
        if name not in parameters:
            listed = ", ".join(sorted(n for n in parameters if n not in FORMAT))
            raise BadQuery(f"no query parameter {name!r} here: {request.path} takes {listed}")


class StrictFilters(filters.DjangoFilterBackend):
    """django-filter's backend, its refusals said as every query parameter's are."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> Any:
        check(request, view)
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            name = next(iter(filterset.errors))
            raise refused(name, takes(filterset.filters[name]), request.query_params[name])
        return filterset.qs
