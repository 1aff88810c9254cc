"""The OpenAPI schema's view of each operation: drf-spectacular's, plus what every operation
under /api/ answers alike, so no view has to say it: the refusals (`{"detail"}`, errors.py)
and the `Location` of what a 201 made. Lists are described in their pages by drf-spectacular
itself, from the pagination class (pages.py), and their query parameters from filters.py."""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi

from .errors import ErrorSerializer

#: The refusals a signed-in operation may answer, and what each means.
_SIGNED_IN = {
    "401": "No token, or one unknown or revoked: the challenge says which.",
    "403": "Refused: who asks may not do this here (the grant it needs is named).",
}
_WITH_BODY = {
    "400": (
        "The body is not what this operation takes: `detail` says why or, when its fields "
        "were refused, each refused field names its messages instead."
    )
}
_WITH_PATH = {"404": "Nothing of that name or id is here."}

_LOCATION = {
    "Location": {
        "schema": {"type": "string", "format": "uri"},
        "description": "the URL of what was made",
    }
}


class AutoSchema(openapi.AutoSchema):
    # _get_response_bodies is drf-spectacular's own seam between the responses a view names
    # (with @extend_schema or not) and the schema: what is added here is added to every
    # operation, whatever the view said, and a code the view names itself is left as it is.
    def _get_response_bodies(self, direction: Any = "response") -> Any:
        responses = super()._get_response_bodies(direction)
        for code, description in self._refusals().items():
            if code not in responses:
                refusal = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                responses[code] = {**refusal, "description": description}
        if "201" in responses:
            responses["201"]["headers"] = {**responses["201"].get("headers", {}), **_LOCATION}
        return responses

    def _refusals(self) -> dict[str, str]:
        if not self.view.get_authenticators():
            return {}  # the schema and its pages: open to anyone
        refusals = dict(_SIGNED_IN)
        if self.method in ("POST", "PATCH", "PUT"):
            refusals |= _WITH_BODY
        if "{" in self.path:  # a path parameter: what it names may not be here
            refusals |= _WITH_PATH
        return dict(sorted(refusals.items()))
