"""The admin's session page, live: the turns running in the session now (status, what they
said so far, who sent them, how long they have run), read from the engine every two seconds,
with Cancel and Dispose buttons that ask the engine through the same services the socket and
the REST API use (engine/services/calls.py), through the engine client, as the signed-in
person, with their grants."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template import engines
from django.urls import URLPattern, path, reverse
from django.utils.safestring import mark_safe

from .admin_engine_calls import admin_does
from .edge import engine_client, runtime
from .engine.host import Host
from .engine.host_status import RunningTurn, running_turns

#: How often the page reads the running turns again.
REFRESH_MS = 2000

RUNNING_TABLE = """{% if turns %}
<table>
  <thead><tr><th>chat</th><th>turn</th><th>status</th><th>sent by</th><th>running for</th>
  <th>message</th><th>said so far</th></tr></thead>
  <tbody>{% for t in turns %}
    <tr><td>{{ t.chat }}</td><td>{{ t.turn_id }}</td><td>{{ t.status }}</td>
    <td>{{ t.sender|default:"nobody named" }}</td><td>{{ t.duration_s|floatformat:1 }} s</td>
    <td>{{ t.message|truncatechars:200 }}</td>
    <td>{% for part in t.parts %}<div>{{ part|truncatechars:300 }}</div>
    {% empty %}nothing yet{% endfor %}</td></tr>{% endfor %}
  </tbody>
</table>
{% else %}<p>No turn is running.</p>{% endif %}"""

LIVE_SECTION = """<div id="ahpd-running" data-live="{{ live }}">{{ table }}</div>
<p>
  <button type="submit" class="button" formmethod="post" formaction="{{ cancel }}">
    Cancel the running turns</button>
  <button type="submit" class="button" formmethod="post" formaction="{{ dispose }}"
    onclick="return confirm('Dispose of this session for every client?')">
    Dispose of the session</button>
</p>
<script>
  setInterval(function () {
    var box = document.getElementById("ahpd-running");
    fetch(box.dataset.live, {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { box.innerHTML = html; } });
  }, {{ refresh_ms }});
</script>"""


def read_running(uri: str) -> list[RunningTurn]:
    """The turns running in the session now, read on the engine's loop."""

    async def read(host: Host) -> list[RunningTurn]:
        return running_turns(host, uri)

    return engine_client.read(read, what="the running turns")


def running_table(uri: str) -> str:
    if not runtime.engine_started():
        return "<p>The engine does not run in this process: no turn runs here.</p>"
    try:
        turns = read_running(uri)
    except engine_client.EngineUnavailable as error:
        return engines["django"].from_string("<p>{{ error }}</p>").render({"error": str(error)})
    return engines["django"].from_string(RUNNING_TABLE).render({"turns": turns})


class LiveSessionAdmin:
    """Mixed into the session admin: the live section (a read-only field) and its URLs."""

    admin_site: Any
    opts: Any

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("<path:object_id>/running/", wrap(self.running_view), name=f"{name}_running"),
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name=f"{name}_cancel"),
            path("<path:object_id>/dispose/", wrap(self.dispose_view), name=f"{name}_dispose"),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def _url(self, action: str, obj: Any) -> str:
        name = f"admin:{self.opts.app_label}_{self.opts.model_name}_{action}"
        return reverse(name, args=[quote(obj.pk)])

    @admin.display(description="running turns")
    def running(self, obj: Any) -> str:
        """The live section of a session's page."""
        if obj is None or obj.pk is None:
            return ""
        context = {
            # Rendered by a template, which escaped what it put in.
            "table": mark_safe(running_table(obj.pk)),  # noqa: S308
            "live": self._url("running", obj),
            "cancel": self._url("cancel", obj),
            "dispose": self._url("dispose", obj),
            "refresh_ms": REFRESH_MS,
        }
        return mark_safe(engines["django"].from_string(LIVE_SECTION).render(context))  # noqa: S308

    def _session(self, request: HttpRequest, object_id: str) -> Any:
        obj = self.get_object(request, unquote(object_id))
        if obj is None or not self.has_view_permission(request, obj):
            raise Http404("no such session")
        return obj

    def running_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._session(request, object_id)
        response = HttpResponse(running_table(obj.pk))
        response["Cache-Control"] = "no-store"
        return response

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._session(request, object_id)
        back = self._url("change", obj)
        if request.method != "POST":
            return HttpResponseRedirect(back)
        done = admin_does(request, "cancel_session", uri=obj.pk)
        if done is not None:
            stopped = ", ".join(done["cancelled"])
            messages.success(request, f"Stopped {stopped} for every client.")
        return HttpResponseRedirect(back)

    def dispose_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._session(request, object_id)
        back = self._url("change", obj)
        if request.method != "POST":
            return HttpResponseRedirect(back)
        if admin_does(request, "dispose_session", uri=obj.pk) is None:
            return HttpResponseRedirect(back)
        messages.success(request, f"Disposed of {obj.pk} for every client.")
        return HttpResponseRedirect(
            reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        )
