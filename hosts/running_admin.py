"""The admin's running-now page: every turn running now across every session (whose session,
who sent it, which agent, since when and for how long, what it spent so far, what it said so
far), with a Cancel button on each. The page reads its rows again every two seconds (a small
HTML fragment at running-now/rows/, fetched by the page's script, as the per-session live
page does, session_admin.py); Cancel asks the engine's cancel_session service through the
engine client as the signed-in person, with their grants (admin_engine_calls.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.template import engines
from django.urls import URLPattern, path, reverse
from django.utils.safestring import mark_safe

from .admin_dates import local_iso
from .admin_engine_calls import admin_does
from .admin_usage import dollars, spent, turns_usage
from .edge import engine_client, runtime
from .engine.host import Host
from .engine.host_status import RunningNow, running_now

#: How often the page reads its rows again.
REFRESH_MS = 2000
#: How much of what a turn said so far a row shows: its last characters.
SAID_SHOWN = 300

ROWS = """{% if error %}<p>{{ error }}</p>{% elif rows %}
<table id="ahpd-running-now">
  <thead><tr><th>session</th><th>whose</th><th>sent by</th><th>agent</th><th>since</th>
  <th>running for</th><th>spend so far</th><th>status</th><th>said so far</th><th></th></tr>
  </thead>
  <tbody>{% for r in rows %}
    <tr data-session="{{ r.session }}" data-turn="{{ r.turn_id }}">
    <td><a href="{{ r.url }}">{{ r.title }}</a></td><td>{{ r.owner }}</td><td>{{ r.sender }}</td>
    <td>{{ r.provider }}</td><td>{{ r.since }}</td><td class="ahpd-for">{{ r.running_for }}</td>
    <td class="ahpd-spend">{{ r.spend }}</td><td>{{ r.status }}</td>
    <td class="ahpd-said">{{ r.said }}</td>
    <td><form method="post" action="{{ cancel }}">{% csrf_token %}
      <input type="hidden" name="session" value="{{ r.session }}">
      <button type="submit" class="button">Cancel</button></form></td></tr>{% endfor %}
  </tbody>
</table>{% else %}<p>No turn is running.</p>{% endif %}"""

PAGE = """{% extends "admin/base_site.html" %}
{% block content %}
<div id="content-main">
  <p>Every turn running now, in every session; read again every {{ refresh_s }} s.
  A session's own page shows its turns with all they said.</p>
  <div id="ahpd-running-rows" data-live="{{ rows_url }}">{{ rows }}</div>
</div>
<script>
  setInterval(function () {
    var box = document.getElementById("ahpd-running-rows");
    fetch(box.dataset.live, {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { box.innerHTML = html; } });
  }, {{ refresh_ms }});
</script>
{% endblock %}"""


def read_running_now() -> list[RunningNow]:
    """Every turn running now, read on the engine's loop."""

    async def read(host: Host) -> list[RunningNow]:
        return running_now(host)

    return engine_client.read(read, what="the running turns")


def running_for(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def spend_so_far(reported: dict[str, Any], recorded: dict[str, Any] | None) -> str:
    """What a running turn spent so far: its usage records' figures where some are written
    (AHPD_USAGE_PER=report writes one per report), else what its reports said (tokens, and
    the agent's own cost), else that nothing was reported yet."""
    if recorded:
        return spent(recorded)
    tokens = sum(
        int(reported.get(key) or 0) for key in ("inputTokens", "outputTokens", "cacheReadTokens")
    )
    cost = ((reported.get("_meta") or {}).get("ahpd.cost") or {}) if reported else {}
    if cost.get("currency", "").upper() == "USD":
        return f"{dollars(cost.get('amount'))}, {tokens} tokens (as the agent said)"
    if tokens:
        return f"{tokens} tokens (not priced yet)"
    return "nothing reported yet"


def said_lately(parts: list[str]) -> str:
    """The end of what a turn said so far (its latest words change as it streams)."""
    said = " ".join(parts)
    if not said:
        return "nothing yet"
    return said if len(said) <= SAID_SHOWN else "…" + said[-SAID_SHOWN:]


def rows_html(request: HttpRequest, cancel_url: str) -> str:
    context: dict[str, Any] = {"cancel": cancel_url, "rows": []}
    if not runtime.engine_started():
        context["error"] = "The engine does not run in this process: no turn runs here."
    else:
        try:
            running = read_running_now()
        except engine_client.EngineUnavailable as error:
            context["error"] = str(error)
        else:
            recorded = turns_usage(now.turn.turn_id for now in running)
            context["rows"] = [
                {
                    "session": now.session,
                    "turn_id": now.turn.turn_id,
                    "url": reverse("admin:hosts_storedsession_change", args=[quote(now.session)]),
                    "title": now.title or now.session,
                    "owner": now.owner or "nobody named",
                    "sender": now.turn.sender or "nobody named",
                    "provider": now.provider,
                    "since": local_iso(now.turn.started_at),
                    "running_for": running_for(now.turn.duration_s),
                    "spend": spend_so_far(now.turn.usage, recorded.get(now.turn.turn_id)),
                    "status": now.turn.status,
                    "said": said_lately(now.turn.parts),
                }
                for now in running
            ]
    return engines["django"].from_string(ROWS).render(context, request)


class RunningNowAdmin:
    """Mixed into the session admin: the running-now page, its rows and its Cancel."""

    admin_site: Any
    opts: Any

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("running-now/", wrap(self.running_now_view), name=f"{name}_running_now"),
            path("running-now/rows/", wrap(self.running_rows_view), name=f"{name}_running_rows"),
            path(
                "running-now/cancel/", wrap(self.running_cancel_view), name=f"{name}_running_cancel"
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def _name(self, action: str) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_{action}")

    def _may_view(self, request: HttpRequest) -> None:
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied

    def running_now_view(self, request: HttpRequest) -> HttpResponse:
        self._may_view(request)
        context = {
            **self.admin_site.each_context(request),
            "title": "Running now",
            "opts": self.opts,
            # Rendered by a template, which escaped what it put in.
            "rows": mark_safe(rows_html(request, self._name("running_cancel"))),  # noqa: S308
            "rows_url": self._name("running_rows"),
            "refresh_ms": REFRESH_MS,
            "refresh_s": REFRESH_MS // 1000,
        }
        page = engines["django"].from_string(PAGE).render(context, request)
        response = HttpResponse(page)
        response["Cache-Control"] = "no-store"
        return response

    def running_rows_view(self, request: HttpRequest) -> HttpResponse:
        self._may_view(request)
        response = HttpResponse(rows_html(request, self._name("running_cancel")))
        response["Cache-Control"] = "no-store"
        return response

    def running_cancel_view(self, request: HttpRequest) -> HttpResponse:
        self._may_view(request)
        back = self._name("running_now")
        if request.method != "POST":
            return HttpResponseRedirect(back)
        uri = request.POST.get("session", "").strip()
        if not uri:
            return HttpResponseBadRequest("session: name the session whose turns to cancel")
        done = admin_does(request, "cancel_session", refused="Nothing cancelled: ", uri=uri)
        if done is not None:
            stopped = ", ".join(done["cancelled"])
            messages.success(request, f"Stopped {stopped} in {uri} for every client.")
        return HttpResponseRedirect(back)
