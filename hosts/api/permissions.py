"""Each view names the grant a method needs; a refusal says so in the socket's words."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .auth import ApiUser

#: What `grants` says for a method that needs a signed-in principal and no grant.
SIGNED_IN = ""


class HoldsGrant(BasePermission):
    """A signed-in principal that holds the grant the view names for the method.

    A view says it with `grants = {"GET": "team:read", "POST": "team:create", ...}`. HEAD needs
    what GET does; OPTIONS (the browsable API's description) only a signed-in principal. A
    method the view handles but does not name is refused: nothing is open by omission.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, ApiUser):
            return False
        method = (request.method or "").upper()
        grants: dict[str, str] = getattr(view, "grants", {})
        if method == "OPTIONS":
            return True
        needed = grants.get("GET" if method == "HEAD" else method)
        if needed is None:
            handled = method.lower() in view.http_method_names and hasattr(view, method.lower())
            if not handled:
                return True  # the view answers 405
            self.message = f"{user.principal.ref} may not {method} here"
            return False
        if needed == SIGNED_IN or user.principal.may(needed):
            return True
        self.message = f"{user.principal.ref} may not {needed} here"
        return False
