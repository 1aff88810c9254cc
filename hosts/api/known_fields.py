"""A request body's fields checked against the serializer's: every app's API refuses a field
it does not know, naming it, and says what is wrong with the others in its own words
(errors.InApiWords)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .errors import InApiWords


class KnownFieldsOnly(InApiWords):
    """A body naming a field the serializer does not have is refused, naming it: a misspelt
    field (or one in snake_case, the API's casing before camelCase) would otherwise be
    ignored in silence, and `{"is_active": false}` would not deactivate anybody."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = {
                name: [f"no such field{_meant(name, self.fields)}"]
                for name in data
                if name not in self.fields
            }
            if unknown:
                raise serializers.ValidationError(unknown)
        return super().to_internal_value(data)


def _meant(name: str, fields: Any) -> str:
    head, *rest = name.split("_")
    camel = head + "".join(part.capitalize() for part in rest)
    return f": did you mean {camel!r}?" if rest and camel in fields else ""
