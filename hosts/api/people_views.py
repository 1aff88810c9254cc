"""The API's people and their tokens, for whoever holds the user:* grants. A person's own
tokens, for themselves, are me_views.py's; both mint and revoke through the same classes."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.cache import patch_cache_control
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from ..edge.addresses import public_base, with_token
from ..models import Token
from ..store import mint_token, revoke_token
from ..store.acts import of_request
from .created import created
from .filters import PersonFilter, TokenFilter
from .serializers import (
    MintedTokenSerializer,
    MintTokenSerializer,
    PersonSerializer,
    TokenSerializer,
)
from .views import Item, Listing

User = get_user_model()


class People:
    subject = "user"
    noun = "person"
    serializer_class = PersonSerializer
    queryset = User.objects.prefetch_related(
        "memberships__role", "memberships__team", "memberships__project"
    )
    lookup_field = "username"
    lookup_url_kwarg = "id"
    item_route = "api:person"


class PeopleView(People, Listing):
    """People: list them, or add one (a Django user whose username is the id)."""

    filterset_class = PersonFilter


class PersonView(People, Item):
    """One person, by id: read, change (email, isActive, roles) or remove them."""


def ws_url(secret: str) -> str:
    """The WebSocket URL a client connects to with this token."""
    return with_token(public_base(), secret)


# -- tokens ----------------------------------------------------------------------------------
#
# A person's tokens are listed and minted by a TokenListing, read and revoked by a TokenItem;
# each names whose tokens it serves (`person`) and the route of one (`item_route`), so the
# operator's views (user:* grants, any person) and a person's own (/api/me/) share the rest.
# As in views.py, these bases have no docstring of their own: the schema would take it.


class TokenListing(generics.ListCreateAPIView):
    serializer_class = TokenSerializer
    filterset_class = TokenFilter
    queryset = Token.objects.all()  # what the schema reads the filters' fields from
    item_route: ClassVar[str]

    def person(self) -> Any:
        raise NotImplementedError

    def get_queryset(self) -> QuerySet[Token]:
        return Token.objects.filter(user=self.person()).order_by("created_at", "pk")

    def item_kwargs(self, token: Token) -> dict[str, str]:
        return {"name": token.name}

    @extend_schema(
        request=MintTokenSerializer,
        responses={201: MintedTokenSerializer},
        description="Mint a token. Its secret is in `token` and `url` this once, never again.",
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        person = self.person()
        asked = MintTokenSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        name = asked.validated_data["name"]
        taken = {"name": [f"{person.username} has a token named {name!r} already"]}
        if Token.objects.filter(user=person, name=name).exists():
            raise exceptions.ValidationError(taken)
        try:
            minted = mint_token(person.username, name, by=of_request(request, "rest"))
        except IntegrityError:
            raise exceptions.ValidationError(taken) from None
        context = {"secret": minted.secret, "url": ws_url(minted.secret)}
        response = created(
            request,
            MintedTokenSerializer(minted.token, context=context).data,
            reverse(self.item_route, kwargs=self.item_kwargs(minted.token)),
        )
        patch_cache_control(response, no_store=True)
        return response


class TokenItem(generics.RetrieveDestroyAPIView):
    serializer_class = TokenSerializer
    noun = "token"
    noun_key = "name"

    def person_filter(self) -> dict[str, Any]:
        raise NotImplementedError

    def get_object(self) -> Token:
        return get_object_or_404(Token, name=self.kwargs["name"], **self.person_filter())

    @extend_schema(responses={204: OpenApiResponse(description="revoked")})
    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        revoke_token(self.get_object(), by=of_request(request, "rest"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokensView(TokenListing):
    """A person's tokens (never their secrets), or a new one, whose secret is said once."""

    grants = {"GET": "user:read", "POST": "user:token"}
    item_route = "api:token"
    noun = "person"
    noun_key = "id"

    def person(self) -> Any:
        return get_object_or_404(User, username=self.kwargs["id"])

    def item_kwargs(self, token: Token) -> dict[str, str]:
        return {"id": self.kwargs["id"], "name": token.name}


class TokenView(TokenItem):
    """A person's token, by name (never its secret); DELETE revokes it: it stops working at
    once, on the socket and here. Revoking one already revoked changes nothing."""

    grants = {"GET": "user:read", "DELETE": "user:token"}

    def person_filter(self) -> dict[str, Any]:
        return {"user__username": self.kwargs["id"]}
