"""`ahpd user token` (mint one) and `ahpd token list|revoke`. Only a token's SHA-256 is kept:
its secret is shown once, when it is minted."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import IntegrityError

from hosts.api.serializers import MintTokenSerializer
from hosts.edge import control
from hosts.edge.addresses import public_base, with_token
from hosts.models import Token
from hosts.store import mint_token, revoke_token
from hosts.store.acts import of_command_line

from .checks import valid
from .people import person_named
from .verbs import Shown, noun, verb

DEFAULT_NAME = "default"


def register(nouns: Any, user: Any) -> None:
    mint = verb(user, "token", "mint a token for a person: its secret, once, and its URL", mint_one)
    mint.add_argument("id", help="the person's id")
    mint.add_argument(
        "--name",
        help=f"what it is for (no slash); by default {DEFAULT_NAME!r}, or "
        f"{DEFAULT_NAME}-2, -3... when they have one so named",
    )

    token = noun(nouns, "token", "tokens: what people sign in with")
    listed = verb(token, "list", "tokens (never their secrets), oldest first", token_list)
    listed.add_argument("id", nargs="?", help="only this person's")
    listed.add_argument("--revoked", action="store_true", help="include revoked tokens")
    revoke = verb(token, "revoke", "revoke a token: it stops working at once", token_revoke)
    revoke.add_argument("id", help="the person's id")
    revoke.add_argument("name", help="the token's name (token list shows them)")


def _free_name(person: Any) -> str:
    taken = set(person.tokens.values_list("name", flat=True))
    name, n = DEFAULT_NAME, 1
    while name in taken:
        n += 1
        name = f"{DEFAULT_NAME}-{n}"
    return name


def _url(secret: str) -> tuple[str | None, str]:
    """The URL a client connects to with the secret, and the note saying it."""
    if control.running() is not None or settings.AHPD_PUBLIC_URL:
        url = with_token(public_base(), secret)
        return url, f"ahpd: connect with {url}"
    if settings.AHPD_PORT == 0:
        return None, "ahpd: the server is not running, and picks its port when it starts"
    url = with_token(public_base(), secret)
    return url, f"ahpd: connect with {url} (once the server runs)"


def mint_one(options: dict[str, Any]) -> Shown:
    person = person_named(options["id"])
    field = MintTokenSerializer().fields["name"]
    if options["name"] is None:
        name = _free_name(person)
    else:
        name = valid("token name", field, options["name"])
    taken = f"{person.username} has a token named {name!r} already"
    if person.tokens.filter(name=name).exists():
        raise CommandError(taken)
    try:
        minted = mint_token(person.username, name, by=of_command_line())
    except IntegrityError:  # minted meanwhile by another
        raise CommandError(taken) from None
    url, note = _url(minted.secret)
    data = {"id": person.username, "name": name, "token": minted.secret, "url": url}
    return Shown(
        data,
        lines=[minted.secret],
        notes=["ahpd: the token is shown once; only its hash is kept.", note],
    )


def _when(moment: Any) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None


def described(token: Token) -> dict[str, Any]:
    return {
        "id": token.user.username,
        "name": token.name,
        "prefix": token.prefix,
        "createdAt": _when(token.created_at),
        "lastUsedAt": _when(token.last_used_at),
        "revokedAt": _when(token.revoked_at),
    }


def token_list(options: dict[str, Any]) -> list[dict[str, Any]]:
    tokens = Token.objects.select_related("user").order_by("created_at", "pk")
    if options["id"] is not None:
        tokens = tokens.filter(user=person_named(options["id"]))
    if not options["revoked"]:
        tokens = tokens.filter(revoked_at__isnull=True)
    return [described(token) for token in tokens]


def token_revoke(options: dict[str, Any]) -> dict[str, Any]:
    person = person_named(options["id"])
    token = Token.objects.select_related("user").filter(user=person, name=options["name"]).first()
    if token is None:
        raise CommandError(f"{person.username} has no token named {options['name']!r}")
    revoke_token(token, by=of_command_line())
    return described(token)
