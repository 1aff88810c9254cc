"""Errors under /api/ are JSON, `{"detail": "..."}`, wherever they are raised, and in the API's
own nouns and casing, never Django's.

Inside a DRF view, `api_exception_handler` answers (a refusal, a 404, a 405): a row not found
is `no such person: nope` (the view names its `noun`), not `No User matches the given query.`;
what is wrong with a body as a whole is `detail`, not `non_field_errors`. A body that fails
validation names its fields instead (`{"name": ["..."]}`), each in the words InApiWords gives
the serializer's fields (`no such team: nope`, `must match ^[^/]+$`), not DRF's or Django's
(`Object with slug=nope does not exist.`, `This value does not match the required pattern.`).
What happens before any view is found, or escapes one, is answered by Django's error
handlers, which ahpsite/urls.py names: these, which say it in JSON under /api/ and leave every
other path to Django's own pages. Django's debug pages (AHPD_DEBUG=1) stand in for the
handlers, as Django does everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core import validators
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.validators import UniqueValidator
from rest_framework.views import exception_handler

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


# -- inside a view ---------------------------------------------------------------------------


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, saying a row not found by the view's noun and a body's own refusal
    (not one field's) as `detail`."""
    view = context.get("view")
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(not_found(view, context["request"]))
    elif isinstance(exc, exceptions.ValidationError):
        exc = _worded(exc)
    elif isinstance(exc, exceptions.ParseError) and str(exc.detail).startswith(_NOT_JSON):
        exc = exceptions.ParseError(f"the body is not JSON: {str(exc.detail)[len(_NOT_JSON) :]}")
    return exception_handler(exc, context)


#: How DRF's JSON parser says a body is not JSON, before the parser's own words.
_NOT_JSON = "JSON parse error - "


def not_found(view: Any, request: Any) -> str:
    """`no such <noun>: <key>`, by what the view serves and the key its path names."""
    noun = getattr(view, "noun", None)
    if noun is None:
        return f"Nothing is at {request.path}."
    kwarg = (
        getattr(view, "noun_key", None)
        or getattr(view, "lookup_url_kwarg", None)
        or getattr(view, "lookup_field", "")
    )
    return f"no such {noun}: {view.kwargs.get(kwarg, '')}"


def _worded(error: exceptions.ValidationError) -> exceptions.ValidationError:
    """A refusal of the whole body is `detail`, a sentence; a field's stays under its name."""
    detail = error.detail
    whole: list[Any] = []
    fields: dict[str, Any] = {}
    if isinstance(detail, list):
        whole = detail
    elif isinstance(detail, Mapping):
        whole = list(detail.get(api_settings.NON_FIELD_ERRORS_KEY, []))
        if isinstance(detail.get("detail"), list):
            whole += detail["detail"]
        fields = {
            name: said
            for name, said in detail.items()
            if name not in (api_settings.NON_FIELD_ERRORS_KEY, "detail")
        }
    if not whole:
        return error
    # Set after construction: ValidationError would make the sentence a list again.
    worded = exceptions.ValidationError()
    worded.detail = {"detail": _sentence(whole), **fields}  # type: ignore[assignment]
    return worded


def _sentence(said: list[Any]) -> str:
    return "; ".join(str(part) for part in said)


# -- a body's fields -------------------------------------------------------------------------

#: What a field is told for each of DRF's codes, where DRF's words are its own.
_WORDS = {
    "required": "required",
    "null": "may not be null",
    "blank": "may not be empty",
    "empty": "may not be empty",
}
#: The same, by the type of the field.
_WORDS_OF: list[tuple[type[serializers.Field], dict[str, str]]] = [  # type: ignore[type-arg]
    (serializers.BooleanField, {"invalid": "true or false, not {input!r}"}),
    (serializers.IntegerField, {"invalid": "must be a whole number"}),
    (serializers.CharField, {"invalid": "must be text"}),
    (serializers.ListField, {"not_a_list": "must be a list"}),
    (serializers.DictField, {"not_a_dict": "must be an object"}),
    (serializers.ChoiceField, {"invalid_choice": "{input!r} is not one of the choices"}),
]


def in_api_words(field: serializers.Field, name: str = "") -> None:  # type: ignore[type-arg]
    """Give `field` (and a list's items) the API's words for what DRF and Django would say."""
    messages = dict(field.error_messages)
    messages |= {code: words for code, words in _WORDS.items() if code in messages}
    for kind, words in _WORDS_OF:
        if isinstance(field, kind):
            messages |= words
    if isinstance(field, serializers.SlugRelatedField) and field.queryset is not None:
        noun = field.queryset.model._meta.verbose_name
        messages["does_not_exist"] = f"no such {noun}: {{value}}"
        messages["invalid"] = messages["incorrect_type"] = f"must be a {noun}'s {field.slug_field}"
    field.error_messages = messages
    items = isinstance(field, serializers.ListField)
    field.validators = [_worded_validator(v, name, items) for v in field.validators]
    child = getattr(field, "child", None)
    if isinstance(child, serializers.Field):
        in_api_words(child)


def _worded_validator(validator: Any, name: str, items: bool) -> Any:
    """The same check, saying what it wants rather than Django's or DRF's words for it."""
    unit = "items" if items else "characters"
    if isinstance(validator, validators.RegexValidator):
        return validators.RegexValidator(
            validator.regex,
            message=f"must match {validator.regex.pattern}",
            code=validator.code,
            inverse_match=validator.inverse_match,
        )
    if isinstance(validator, validators.EmailValidator):
        return validators.EmailValidator(message="must be an email address")
    for kind, words in (
        (validators.MaxLengthValidator, f"at most {{limit_value}} {unit}"),
        (validators.MinLengthValidator, f"at least {{limit_value}} {unit}"),
        (validators.MaxValueValidator, "at most {limit_value}"),
        (validators.MinValueValidator, "at least {limit_value}"),
    ):
        if type(validator) is kind:
            limit = validator.limit_value
            return kind(limit, message=words.format(limit_value=limit))
    if isinstance(validator, UniqueValidator) and "already exists" in str(validator.message):
        noun = validator.queryset.model._meta.verbose_name
        return UniqueValidator(
            validator.queryset,
            message=f"a {noun} has this {name or 'value'} already",
            lookup=validator.lookup,
        )
    return validator


class InApiWords(serializers.Serializer):  # type: ignore[type-arg]
    """A serializer whose fields refuse in the API's words (in_api_words), and which says a
    body that is not an object as `detail`."""

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        fields = super().get_fields()
        for name, field in fields.items():
            in_api_words(field, name)
        return fields

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise exceptions.ValidationError(
                {"detail": [f"the body must be a JSON object, not {json_type(data)}"]}
            )
        return super().to_internal_value(data)


def json_type(value: Any) -> str:
    """What JSON calls the type of `value`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    for kind, said in ((str, "a string"), (int | float, "a number"), (list, "a list")):
        if isinstance(value, kind):
            return said
    return "an object"
