"""ahpd's one settings file: every knob is read by a typed helper from the environment, or
else from the env file (AHPD_ENV_FILE, else `.env` at the checkout's root, which `serve`
writes at its first start), so the server and every management command agree.

A bad value stops the server at start with a message naming the variable (see manage.py).
"""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
from pathlib import Path

import dj_database_url

from hosts.edge.origins import parse_allowed as parse_allowed_origins
from hosts.engine import root_config
from usage.periods import zone_known

from .env import (
    EnvError,
    create_private,
    env_bool,
    env_choice,
    env_dir_made,
    env_dirs,
    env_existing_paths,
    env_float,
    env_int,
    env_shell_env,
    env_str,
    env_url,
    from_file,
    load_env_file,
    make_private,
)

BASE_DIR = Path(__file__).resolve().parent.parent
#: The env file read under the environment (it need not exist; `serve` writes it).
AHPD_ENV_FILE = load_env_file(BASE_DIR / ".env")

# -- the host --------------------------------------------------------------------------------

AHPD_HOST = env_str("AHPD_HOST", "127.0.0.1") or "127.0.0.1"
AHPD_PORT = env_int("AHPD_PORT", 9187, minimum=0, maximum=65535)
#: The URL clients reach this server by, when it is not the one it listens on (a container's
#: port mapping, a proxy): printed at start and in every minted token's URL.
AHPD_PUBLIC_URL = env_url("AHPD_PUBLIC_URL", ("ws", "wss"))
#: AHPD_DATA_DIR_MADE: whether this process made it: a management command refused before any
#: server kept anything there removes what it made (hosts/management/ahpd/checks.py).
AHPD_DATA_DIR, AHPD_DATA_DIR_MADE = env_dir_made("AHPD_DATA_DIR", BASE_DIR / "var")
#: The embedded database, beside the tokens and keys the data directory keeps.
SQLITE_NAME = "ahpd.sqlite3"
#: What the server keeps in its data directory: made 0600 at every start, the directory 0700.
PRIVATE_FILES = (
    "secret-key",
    "connection-token",
    "server.json",
    *(SQLITE_NAME + suffix for suffix in ("", "-wal", "-shm", "-journal")),
)
make_private("AHPD_DATA_DIR", AHPD_DATA_DIR, PRIVATE_FILES)
AHPD_CONNECTION_TOKEN = env_str("AHPD_CONNECTION_TOKEN")
AHPD_CONNECTION_TOKEN_FILE = env_str("AHPD_CONNECTION_TOKEN_FILE")
AHPD_WITHOUT_CONNECTION_TOKEN = env_bool("AHPD_WITHOUT_CONNECTION_TOKEN")
if AHPD_CONNECTION_TOKEN and AHPD_CONNECTION_TOKEN_FILE:
    raise EnvError("set AHPD_CONNECTION_TOKEN or AHPD_CONNECTION_TOKEN_FILE, not both")
if AHPD_WITHOUT_CONNECTION_TOKEN and (AHPD_CONNECTION_TOKEN or AHPD_CONNECTION_TOKEN_FILE):
    raise EnvError("AHPD_WITHOUT_CONNECTION_TOKEN=1 cannot be combined with a connection token")
if AHPD_CONNECTION_TOKEN_FILE and not Path(AHPD_CONNECTION_TOKEN_FILE).expanduser().is_file():
    raise EnvError(f"AHPD_CONNECTION_TOKEN_FILE names no file: {AHPD_CONNECTION_TOKEN_FILE!r}")
#: Web origins (http(s)://host[:port]) besides this server's own whose pages may open the
#: socket; a page of any other web origin is refused at the upgrade (hosts/edge/origins.py).
try:
    AHPD_ALLOWED_ORIGINS = parse_allowed_origins(env_str("AHPD_ALLOWED_ORIGINS", "") or "")
except ValueError as exc:
    raise EnvError(f"AHPD_ALLOWED_ORIGINS: {exc}") from None
#: Bytes a client that is not reading may fall behind (clientQueueBytes' default).
AHPD_CLIENT_QUEUE_BYTES = env_int("AHPD_CLIENT_QUEUE_BYTES", 16 * 1024 * 1024, minimum=0)
#: Bytes of recent envelopes held for reconnecting clients (replayBytes' default).
AHPD_REPLAY_BYTES = env_int("AHPD_REPLAY_BYTES", 32 * 1024 * 1024, minimum=0)
for _variable, _key, _value in (
    ("AHPD_CLIENT_QUEUE_BYTES", root_config.CLIENT_QUEUE_BYTES, AHPD_CLIENT_QUEUE_BYTES),
    ("AHPD_REPLAY_BYTES", root_config.REPLAY_BYTES, AHPD_REPLAY_BYTES),
):
    # The default a push would be refused is refused here, by the rule a push is checked by.
    if (_problem := root_config.check_byte_bound(_key, _value)) is not None:
        raise EnvError(f"{_variable}: {_problem}, got {_value}")
#: What all clients' queues may hold together; past it the clients furthest behind are closed
#: as one past clientQueueBytes is (0: no bound).
AHPD_CLIENT_QUEUES_TOTAL_BYTES = env_int(
    "AHPD_CLIENT_QUEUES_TOTAL_BYTES", 256 * 1024 * 1024, minimum=0
)
#: The largest WebSocket message a client may send; a larger one is closed 1009. 64 MiB holds
#: a file of attachmentFetchLimitBytes (32 MiB) sent back base64-encoded.
AHPD_MAX_FRAME_BYTES = env_int("AHPD_MAX_FRAME_BYTES", 64 * 1024 * 1024, minimum=1024 * 1024)
#: How long a turn's streamed text is gathered before it is said; 0 says every chunk.
AHPD_DELTA_WINDOW_MS = env_int("AHPD_DELTA_WINDOW_MS", 75, minimum=0, maximum=1000)
#: The name the deployment's own token signs in as: root:<AHPD_HOST_NAME>.
AHPD_HOST_NAME = env_str("AHPD_HOST_NAME", socket.gethostname() or "ahpd") or "ahpd"
#: This process's name among the nodes of its host (every `serve` on the same database is
#: one): the machine and its port by default, or its pid where the port is picked at start.
AHPD_NODE_ID = env_str("AHPD_NODE_ID") or (
    f"{socket.gethostname() or 'ahpd'}:{AHPD_PORT or os.getpid()}"
)
#: How long a node's claim lasts unless renewed (it is renewed every third of it): how soon a
#: node killed, or a machine lost, is known to be gone.
AHPD_NODE_LEASE_SECONDS = env_int("AHPD_NODE_LEASE_SECONDS", 15, minimum=3, maximum=3600)
#: How many agents this node may run at once, which it tells the other nodes; 0 sets none.
AHPD_NODE_AGENTS = env_int("AHPD_NODE_AGENTS", 0, minimum=0)
#: How long a client that dropped stays in the sessions it was in (activeClients).
AHPD_PRESENCE_GRACE_MS = env_int("AHPD_PRESENCE_GRACE_MS", 30000, minimum=0)
#: How long an idle chat's agent process is kept before it is let go (the reference's
#: sleepAfterMinutes; fractions of a minute are taken); 0 never lets one go on time alone.
AHPD_SLEEP_AFTER_MINUTES = env_float("AHPD_SLEEP_AFTER_MINUTES", 30.0)
#: How many sessions may run agents before the least recently used idle one's are let go
#: (the reference's sessionResidencyLimit); 0 sets no limit.
AHPD_SESSION_RESIDENCY_LIMIT = env_int("AHPD_SESSION_RESIDENCY_LIMIT", 10, minimum=0)
#: How many agents one person's sessions may have at work at once; 0 sets no cap.
AHPD_AGENTS_PER_PERSON = env_int("AHPD_AGENTS_PER_PERSON", 10, minimum=0)
#: How many resource watches one person may hold open at once; 0 sets no cap.
AHPD_WATCHES_PER_PERSON = env_int("AHPD_WATCHES_PER_PERSON", 32, minimum=0)

# -- the sandbox people's processes run in (hosts/backends/sandbox.py) ------------------------
#: bwrap: agents, their commands, terminals, `!` commands and the host's git for a session run
#: in bubblewrap; off: as the server's own user (then only a host-wide admin may open a
#: terminal or run a `!` command). Unset: bwrap wherever it can start, checked once at start.
AHPD_SANDBOX = env_choice("AHPD_SANDBOX", "AUTO", ("AUTO", "BWRAP", "OFF")).lower()
#: on: the network stays (agents call their model APIs); none: cut inside the sandbox.
AHPD_SANDBOX_NETWORK = env_choice("AHPD_SANDBOX_NETWORK", "ON", ("ON", "NONE")).lower()
#: More read-only paths in every sandbox (a toolchain under /opt, say), `:`-separated.
AHPD_SANDBOX_PATHS = env_existing_paths("AHPD_SANDBOX_PATHS")

# -- usage and policies (usage/) ---------------------------------------------------------------
#: turn: one usage record as a turn ends; report: one per usage report, so a running turn is
#: billed (and stopped at its budget) while it spends.
AHPD_USAGE_PER = env_choice("AHPD_USAGE_PER", "TURN", ("TURN", "REPORT")).lower()
#: The IANA zone days start in and weeks start on (Monday 00:00); empty: the system's own.
AHPD_USAGE_TIMEZONE = env_str("AHPD_USAGE_TIMEZONE", "") or ""
#: A zone named that this host cannot read: the system's own is used instead, as seed 004
#: says, and `serve` says so once at start.
AHPD_USAGE_TIMEZONE_UNREAD = ""
if AHPD_USAGE_TIMEZONE and not zone_known(AHPD_USAGE_TIMEZONE):
    AHPD_USAGE_TIMEZONE_UNREAD, AHPD_USAGE_TIMEZONE = AHPD_USAGE_TIMEZONE, ""
#: Whether the policy rows are enforced at createSession and at every turn start.
AHPD_POLICIES_CHECK = env_bool("AHPD_POLICIES_CHECK", False)
#: Which row of one scope pays first: the one ending soonest, the regular (no until) ones, or
#: the extra (with an until) ones, newest first.
AHPD_POLICIES_PAY_ORDER = env_choice(
    "AHPD_POLICIES_PAY_ORDER", "ENDING", ("ENDING", "REGULAR", "EXTRA")
).lower()
#: Whether a person reads the limits that apply to them (usage://limits).
AHPD_POLICIES_OWN_LIMITS = env_bool("AHPD_POLICIES_OWN_LIMITS", True)

# The folders this host serves over the resource methods, and where sessions may work: the
# first is where a session goes when it names none (initialize's defaultDirectory).
AHPD_PATHS = env_dirs("AHPD_PATHS", Path.cwd())
# A resourceRead over this many bytes is refused, naming the limit (0: no limit).
AHPD_RESOURCE_READ_LIMIT_BYTES = env_int(
    "AHPD_RESOURCE_READ_LIMIT_BYTES", 32 * 1024 * 1024, minimum=0
)
# A file attached to a message is read for its agent up to this size; a larger one is left
# as sent (named by its label and URI).
AHPD_ATTACHMENT_FETCH_LIMIT_BYTES = env_int(
    "AHPD_ATTACHMENT_FETCH_LIMIT_BYTES", 32 * 1024 * 1024, minimum=0
)
#: The most output a terminal holds for a client that subscribes late (its scrollback).
AHPD_TERMINAL_SCROLLBACK_BYTES = env_int(
    "AHPD_TERMINAL_SCROLLBACK_BYTES", 1024 * 1024, minimum=4096
)
#: What every terminal's shell gets in its environment beside the server's own (less the
#: server's AHPD_ and DJANGO_ settings): a JSON object of name to text, null to take one away.
AHPD_SHELL_ENV = env_shell_env("AHPD_SHELL_ENV")
#: How many terminals one person may have open at once (0: no cap), the deployment's token
#: and admins included.
AHPD_TERMINALS_PER_PERSON = env_int("AHPD_TERMINALS_PER_PERSON", 10, minimum=0)
#: The operator's agents (a JSON file; see hosts/backends/config.py).
AHPD_CONFIG = env_str("AHPD_CONFIG")
if AHPD_CONFIG and not Path(AHPD_CONFIG).expanduser().is_file():
    raise EnvError(f"AHPD_CONFIG names no file: {AHPD_CONFIG!r}")
#: A file the server appends every frame to, both directions (hosts/edge/wire_capture.py);
#: `manage.py serve --wire <file>` sets it for one run.
AHPD_WIRE = env_str("AHPD_WIRE")

# -- telemetry: the ahp-otlp channels, and a collector (README, "Telemetry") ------------------

# The standard OTEL_* variables an env file gives are put in the environment (which wins),
# where OpenTelemetry's exporters read them: endpoint, headers, timeout, certificates...
for _name, _value in from_file().items():
    if _name.startswith("OTEL_"):
        os.environ.setdefault(_name, _value)
#: How often metrics are said on ahp-otlp://metrics and sent to a collector, in ms: the
#: standard variable, 10 s here rather than the SDK's 60 s, as a client watching wants them.
OTEL_METRIC_EXPORT_INTERVAL = env_int("OTEL_METRIC_EXPORT_INTERVAL", 10_000, minimum=100)
#: The OTLP protocol the collector exporters speak: HTTP with protobuf bodies alone.
OTLP_PROTOCOL = "http/protobuf"


def _collector_signals() -> frozenset[str]:
    """The signals a collector is sent: those OTEL_EXPORTER_OTLP_ENDPOINT (or the signal's own
    OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT) names one for; none when neither is set."""
    signals = set()
    for signal in ("logs", "traces", "metrics"):
        own = f"OTEL_EXPORTER_OTLP_{signal.upper()}_"
        if not (env_str(own + "ENDPOINT") or env_str("OTEL_EXPORTER_OTLP_ENDPOINT")):
            continue
        for name in (own + "PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
            protocol = env_str(name)
            if protocol:
                if protocol.strip().lower() != OTLP_PROTOCOL:
                    raise EnvError(f"{name} must be {OTLP_PROTOCOL} here; got {protocol!r}")
                break
        signals.add(signal)
    return frozenset(signals)


AHPD_OTLP_COLLECTOR_SIGNALS = _collector_signals()

# -- Django ----------------------------------------------------------------------------------


def _secret_key() -> tuple[str, bool]:
    """The key, and whether this process made the data directory's `secret-key` file."""
    given = env_str("DJANGO_SECRET_KEY")
    if given:
        return given, False
    path = AHPD_DATA_DIR / "secret-key"
    made = False
    if not path.exists():
        # Written whole under another name, then linked into place: of several processes
        # starting at once (web, worker, beat), one key wins and none reads half of one.
        fd, spare = tempfile.mkstemp(dir=AHPD_DATA_DIR, prefix=".secret-key-")
        with os.fdopen(fd, "w") as file:  # mkstemp's file is 0600
            file.write(secrets.token_urlsafe(50))
        try:
            os.link(spare, path)
            made = True
        except FileExistsError:
            pass
        finally:
            os.unlink(spare)
    return path.read_text().strip(), made


#: SECRET_KEY_MADE: whether this process made its file (as AHPD_DATA_DIR_MADE).
SECRET_KEY, SECRET_KEY_MADE = _secret_key()
DEBUG = env_bool("AHPD_DEBUG", False)
ALLOWED_HOSTS = sorted(
    {"127.0.0.1", "localhost", "[::1]", AHPD_HOST}
    | {h.strip() for h in (env_str("AHPD_ALLOWED_HOSTS", "") or "").split(",") if h.strip()}
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "hosts",
    "automations",
    "usage",
    "audit",
    "mcp_servers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # daphne serves no files: the admin's and the API pages' static files are served here.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "hosts.api.trailing_slash.OptionalTrailingSlash",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The admin's dates in the admin user's time zone (their browser's, kept in a cookie).
    "hosts.admin_dates.BrowserTimeZone",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "ahpsite.urls"
ASGI_APPLICATION = "ahpsite.asgi.application"

# The composition root (ahpsite/): what one app is given of another, named here so that hosts
# imports nothing of usage or automations and those two nothing of each other (the layout
# test, tests/engine/test_layout.py, holds it). These are wiring, not knobs: no environment
# variable sets them.
#: What makes the process's engine with its Django adapters (hosts/edge/runtime.py runs it).
AHPD_ENGINE_BUILDER = "ahpsite.engine.build_engine"
#: The `ahpd` command's nouns from the other apps (usage and policy; audit; automation; mcp),
#: each a register(nouns) function.
AHPD_COMMAND_NOUNS = [
    "usage.cli.register",
    "audit.cli.register",
    "automations.cli.register",
    "mcp_servers.cli.register",
]
#: What keeps an audit record, for hosts and usage (hosts/store/acts.py): the audit app's.
AHPD_AUDIT_RECORDER = "audit.trail.record_act"
#: What reads a set of sessions' usage: an automation run's figures (automations/run_usage.py).
AHPD_SESSIONS_USAGE = "usage.reading.used_by_sessions"
#: What reads turns' usage: the admin's Turns list and running-now page (hosts/admin_usage.py).
AHPD_TURNS_USAGE = "usage.reading.used_by_turns"
#: What reads one pool's today, week and month: the admin's person page (hosts/admin_usage.py).
AHPD_POOL_USAGE = "usage.reading.pool_json"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The admin's own base page (ahpsite/templates/admin/base_site.html: the ahpd header,
        # the browser's time zone) is found before django.contrib.admin's.
        "DIRS": [BASE_DIR / "ahpsite" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql", "sqlite"))
#: Whether this process made the embedded database's (empty) file: a management command that
#: finds no database there removes it again rather than leave an empty one behind.
SQLITE_MADE = False
if DATABASE_URL:
    DATABASES = {
        "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    }
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # An address that answers nothing is refused at start in seconds, not minutes.
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 10)
else:
    SQLITE_MADE = create_private(AHPD_DATA_DIR / SQLITE_NAME)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": AHPD_DATA_DIR / SQLITE_NAME,
            # The engine's write-behind writes a few times a second: a connection kept (and
            # checked before reuse) rather than opened, with its pragmas, for every round.
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
            # WAL: readers never wait on the write-behind, and a commit is one fsync.
            # IMMEDIATE: a transaction takes the write lock as it begins, so a second writer
            # (one of the engine's database threads beside another) waits out the timeout for it; a
            # deferred one that read first fails at once, "database is locked", when another
            # wrote in between.
            "OPTIONS": {
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"))
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 times a blocking read out otherwise; the pool must be bounded.
                "hosts": [{"address": REDIS_URL, "socket_timeout": None, "max_connections": 64}],
                "capacity": 1000,
                # Two deployments on one Redis keep apart by prefix (the tests run many).
                "prefix": env_str("AHPD_REDIS_PREFIX", "ahpd"),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL

# -- automations: who fires schedules (README, "Automations") ---------------------------------
# embedded: the server's own scheduler (make run: no Redis, no Celery); celery: beat's one
# entry below, run by a worker, which claims due runs and asks the server to start them.
AHPD_AUTOMATION_SCHEDULER = env_choice(
    "AHPD_AUTOMATION_SCHEDULER", "CELERY" if REDIS_URL else "EMBEDDED", ("EMBEDDED", "CELERY")
).lower()
#: How often due schedules are looked for (a run starts within this of its due time).
AHPD_AUTOMATION_TICK_SECONDS = env_float("AHPD_AUTOMATION_TICK_SECONDS", 2.0, minimum=0.1)
# What one automation and one person's automations may hold and start (README, "Automations");
# 0 sets no bound. Root's automations (the deployment's token) are held to the triggers alone.
#: Schedules one automation may carry.
AHPD_AUTOMATION_TRIGGERS_MAX = env_int("AHPD_AUTOMATION_TRIGGERS_MAX", 10, minimum=0)
#: Automations one person may keep.
AHPD_AUTOMATIONS_PER_PERSON = env_int("AHPD_AUTOMATIONS_PER_PERSON", 50, minimum=0)
#: Runs one person's automations may start in any rolling hour, by hand or on schedule.
AHPD_AUTOMATION_RUNS_PER_HOUR = env_int("AHPD_AUTOMATION_RUNS_PER_HOUR", 60, minimum=0)
CELERY_BEAT_SCHEDULE = {
    "fire-due-automations": {
        "task": "automations.tasks.fire_due_automations",
        "schedule": AHPD_AUTOMATION_TICK_SECONDS,
        # A tick no worker took within its own period is dropped, not queued: with no worker
        # running, beat's ticks would pile up and all run at once when one starts.
        "options": {"expires": AHPD_AUTOMATION_TICK_SECONDS},
    }
}

# -- the HTTP API (/api) -----------------------------------------------------------------------

REST_FRAMEWORK = {
    # The socket's tokens, as `Authorization: Bearer`; and, for the browsable API, the admin
    # site's sign-in (a session cookie, so every unsafe method is CSRF-checked).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "hosts.api.auth.BearerAuthentication",
        "hosts.api.auth.AdminSiteSession",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["hosts.api.permissions.HoldsGrant"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "hosts.api.schema.AutoSchema",
    # Every list in pages, {"count", "next", "previous", "results"} (?limit=, ?offset=), each
    # narrowed by its view's filterset_class, if it names one.
    "DEFAULT_PAGINATION_CLASS": "hosts.api.pages.Pages",
    "DEFAULT_FILTER_BACKENDS": ["hosts.api.query_parameters.StrictFilters"],
    # Errors in the API's own nouns and casing (hosts/api/errors.py).
    "EXCEPTION_HANDLER": "hosts.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "ahpd API",
    "DESCRIPTION": (
        "People, tokens, teams, projects, roles, root config and sessions of an Agent Host "
        "Protocol server. Sign in with `Authorization: Bearer <token>`: the deployment's "
        "connection token, or a person's token."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The schema says what the API is, not who may use it: served to anyone.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # /api/docs/ and /api/redoc/ load their scripts from this host (drf-spectacular-sidecar).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# `collectstatic` gathers them here (`make` does, and the image at build); WhiteNoise serves
# them from here, and from the apps' own folders for a file added since (a checkout that was
# pulled and not collected again still serves the new file).
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True

# AHPD_LOG_FORMAT=json: one JSON object a line, with what a record carries besides its message
# (peer, turn, chat, ending...) as fields of its own, for a log shipper to read.
AHPD_LOG_FORMAT = env_choice("AHPD_LOG_FORMAT", "PLAIN", ("PLAIN", "JSON")).lower()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        # Its `time` is ISO 8601 with the zone's offset (ahpsite/log_format.py).
        "json": {
            "()": "ahpsite.log_format.JsonLines",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": AHPD_LOG_FORMAT},
    },
    "loggers": {
        "ahpd": {
            "handlers": ["console"],
            "level": env_choice(
                "AHPD_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
            ),
            "propagate": False,
        },
        "django": {"handlers": ["console"], "level": "WARNING"},
        "daphne": {"handlers": ["console"], "level": "WARNING"},
    },
}
