"""The one settings module, read from the environment. A bad value raises at start-up (ImproperlyConfigured).

Without DATABASE_URL / REDIS_URL, the embedded services under `var/` are used (zeromem.devservices);
`manage.py` and the test plugin start them and export the URLs before this module is read.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from zeromem import devservices
from zeromem.core.domain.policy import policy_fields

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default).strip() or default


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int, maximum: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float, maximum: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def database_config(url: str) -> dict[str, object]:
    if not url.startswith(("postgres://", "postgresql://")):
        raise ImproperlyConfigured(f"DATABASE_URL must be a postgresql:// URL, got {url.split('@')[-1]!r}")
    config: dict[str, object] = dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
    config["ENGINE"] = "django.db.backends.postgresql"
    # The search's vector pool filters an HNSW scan by user: pgvector 0.8 keeps walking the graph until enough
    # rows pass (iterative scan), from 100 candidates (the pool). Set once per connection, not per query.
    options = dict(config.get("OPTIONS") or {})  # type: ignore[call-overload]
    options["options"] = f"{options.get('options', '')} {HNSW_OPTIONS}".strip()
    config["OPTIONS"] = options
    return config


HNSW_OPTIONS = "-c hnsw.ef_search=100 -c hnsw.iterative_scan=relaxed_order"


def redis_url(url: str) -> str:
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"REDIS_URL must be a redis:// URL, got {url!r}")
    return url


def embedded_urls() -> devservices.ServiceUrls:
    """URLs of the embedded services: what this checkout's `devservers start` recorded, else its own PostgreSQL
    socket and a broker URL that fails loudly (never another checkout's broker)."""
    state = devservices.EmbeddedServices().read_state() or {}
    pgdata = devservices.DEFAULT_VAR_DIR / "pg"
    return devservices.ServiceUrls(
        database_url=str(state.get("database_url") or f"postgresql://postgres:@/postgres?host={pgdata}"),
        redis_url=str(state.get("redis_url") or devservices.NOT_STARTED_REDIS_URL),
    )


# Django's debug mode: tracebacks in pages, and no secret key needed. Never in production.
DEBUG = env_bool("ZEROMEMORY_DEBUG", False)
# Local mode (no secret key needed): no DATABASE_URL, or ZEROMEM_EMBEDDED=1, which `manage.py` and the test plugin
# set when they start the embedded PostgreSQL and Valkey and export their URLs.
EMBEDDED_SERVICES = not os.environ.get("DATABASE_URL") or os.environ.get("ZEROMEM_EMBEDDED") == "1"
# Django's secret key (sessions, CSRF), at least 32 characters; required against a real database.
SECRET_KEY = os.environ.get("ZEROMEMORY_SECRET_KEY", "")
if SECRET_KEY and len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("ZEROMEMORY_SECRET_KEY must be at least 32 characters")
if not SECRET_KEY:
    if not (DEBUG or EMBEDDED_SERVICES):
        raise ImproperlyConfigured("ZEROMEMORY_SECRET_KEY must be set when running against a real database")
    SECRET_KEY = "dev-only-insecure-key-for-the-embedded-services"  # noqa: S105 - local mode only
# The host names this server answers to, comma-separated.
ALLOWED_HOSTS = [h.strip() for h in env_str("ZEROMEMORY_ALLOWED_HOSTS", "localhost,127.0.0.1,testserver").split(",")
                 if h.strip()]

_embedded = embedded_urls()
# PostgreSQL with pgvector, as postgresql://user:password@host:port/database.
DATABASES = {"default": database_config(env_str("DATABASE_URL", _embedded.database_url))}
# The Celery broker and result store (Valkey or Redis), as redis://host:port/0.
REDIS_URL = redis_url(env_str("REDIS_URL", _embedded.redis_url))

INSTALLED_APPS = [
    "zeromem.operator.apps.OperatorAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_celery_beat",
    "ninja",  # django-ninja's own Swagger UI template and static files: /docs loads nothing from a CDN
    "zeromem",
    "consolidation",
    "profiles",
    *(["zeromem.devtools"] if importlib.util.find_spec("zeromem.devtools") else []),
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files with DEBUG off: gunicorn and runserver alike
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "zeromem.urls"
WSGI_APPLICATION = "zeromem.wsgi.application"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [Path(__file__).resolve().parent / "operator" / "templates"],  # the admin app is Django's own
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
FORMS_URLFIELD_ASSUME_HTTPS = True  # the Django 6 default, today
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
STATIC_URL = "static/"
# Where `collectstatic` puts the admin's static files (the image collects them at build).
STATIC_ROOT = Path(env_str("ZEROMEMORY_STATIC_ROOT", str(BASE_DIR / "var" / "static")))
# WhiteNoise serves what `collectstatic` put in STATIC_ROOT (the image collects at build) and, through the finders,
# the apps' own static files where nothing was collected (a checkout): the admin renders either way.
WHITENOISE_USE_FINDERS = True
# In a checkout nothing is collected, so STATIC_ROOT may not exist: the finders serve the files, no need to warn.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)  # WhiteNoise's
# Request body limit: a full batch of 1,000 memories at the content limit is ~16 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ZEROMEMORY_MAX_BODY_BYTES", 20 * 1024 * 1024, minimum=1024,
                                      maximum=512 * 1024 * 1024)
# Our own loggers (and Celery's: task received / succeeded / failed, one summary line per run) at
# ZEROMEMORY_LOG_LEVEL, INFO by default; third-party libraries at WARNING. The worker uses this too
# (zeromem/celery.py), so `celery worker --loglevel` does not decide it.
LOG_LEVEL = env_choice("ZEROMEMORY_LOG_LEVEL", "INFO", {"DEBUG", "INFO", "WARNING", "ERROR"})
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {name: {"level": LOG_LEVEL} for name in ("zeromem", "consolidation", "profiles", "celery")},
}

# --- embedding, search and requests ----------------------------------------------------------------------
# Embedding: "builtin:minilm" (local all-MiniLM-L6-v2, int8 ONNX), "builtin:hash" (deterministic, meaning-free;
# tests), or any litellm embedding model name. The dimension is fixed into the schema at migrate time.
ZEROMEMORY_EMBEDDING_MODEL = env_str("ZEROMEMORY_EMBEDDING_MODEL", "builtin:minilm")
# The embedding model's vector dimension, fixed into the schema at migrate time.
ZEROMEMORY_EMBEDDING_DIM = env_int("ZEROMEMORY_EMBEDDING_DIM", 384, minimum=8, maximum=4000)
if ZEROMEMORY_EMBEDDING_MODEL == "builtin:minilm" and ZEROMEMORY_EMBEDDING_DIM != 384:
    raise ImproperlyConfigured("builtin:minilm produces 384-dimensional vectors; set ZEROMEMORY_EMBEDDING_DIM=384")
# Texts of one call embedded at once, each by a single-threaded run of the one session (so at most this many cores).
ZEROMEMORY_EMBEDDING_WORKERS = env_int("ZEROMEMORY_EMBEDDING_WORKERS", 2, minimum=1, maximum=64)
# Where builtin:minilm keeps the int8 model it derives from the installed package on first use (~60 MB).
ZEROMEMORY_MODEL_CACHE_DIR = env_str("ZEROMEMORY_MODEL_CACHE_DIR", os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "zeromem"))
if not os.path.isabs(ZEROMEMORY_MODEL_CACHE_DIR):
    raise ImproperlyConfigured(
        f"ZEROMEMORY_MODEL_CACHE_DIR must be an absolute path, got {ZEROMEMORY_MODEL_CACHE_DIR!r}")
# Search-query vectors kept per process (least recently used first out); 0 embeds every query.
ZEROMEMORY_QUERY_CACHE_SIZE = env_int("ZEROMEMORY_QUERY_CACHE_SIZE", 1024, minimum=0, maximum=1_000_000)
# Batches up to this size are embedded inside the request (the agent can search what it just wrote);
# larger ones are stored first and embedded by a Celery task (keyword-findable meanwhile).
ZEROMEMORY_INLINE_EMBED_MAX = env_int("ZEROMEMORY_INLINE_EMBED_MAX", 64, minimum=0, maximum=1000)
# PostgreSQL text-search configuration for the full-text index ("english" stems English; "simple" suits
# any language). Fixed into the schema at migrate time.
ZEROMEMORY_SEARCH_CONFIG = env_choice("ZEROMEMORY_SEARCH_CONFIG", "english", {
    "simple", "english", "german", "french", "spanish", "italian", "portuguese", "dutch", "russian",
    "swedish", "norwegian", "danish", "finnish", "hungarian", "romanian", "turkish", "arabic", "indonesian"})
# The longest memory accepted, in characters.
ZEROMEMORY_MAX_CONTENT_CHARS = env_int("ZEROMEMORY_MAX_CONTENT_CHARS", 16_000, minimum=100, maximum=1_000_000)
# Memories one POST /memories may store at most.
ZEROMEMORY_MAX_BATCH = env_int("ZEROMEMORY_MAX_BATCH", 1000, minimum=1, maximum=10_000)
# How long a web process keeps an authenticated API key: a revoked key is refused everywhere within this time.
ZEROMEMORY_KEY_CACHE_SECONDS = env_float("ZEROMEMORY_KEY_CACHE_SECONDS", 5.0, minimum=0.0, maximum=300.0)

# The Celery worker lowers its own CPU priority by this much (os.nice) at start: consolidation yields the CPU to the
# web tier's searches on a shared machine. 0 = same priority.
ZEROMEMORY_WORKER_NICE = env_int("ZEROMEMORY_WORKER_NICE", 10, minimum=0, maximum=19)
# ... and runs under Linux's SCHED_IDLE policy (its database sessions too, where it may renice them): a search
# takes a CPU the worker holds at once. Off: nice alone.
ZEROMEMORY_WORKER_SCHED_IDLE = env_bool("ZEROMEMORY_WORKER_SCHED_IDLE", True)

# --- Celery ----------------------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
# kombu's Redis transport with a guard: a broker going away while a worker holds a message must not stop the worker
# (zeromem/core/broker.py).
CELERY_BROKER_TRANSPORT = "zeromem.core.broker:Transport"
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# With acks_late on Redis a task held by a killed worker comes back only after visibility_timeout, and a
# task running longer than it is delivered twice: set it explicitly, longer than the longest task's hard
# time limit; run claims carry their own lease (ARCHITECTURE.md, "Runtime").
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("ZEROMEMORY_VISIBILITY_TIMEOUT", 7200, minimum=10, maximum=86_400),
    # How often a worker looks for messages whose worker died (older than the visibility timeout) to redeliver.
    # kombu's default sweep is every 10 s × a throttle of 10; one cheap sorted-set query every
    # ZEROMEMORY_BROKER_RESTORE_SECONDS instead.
    "unacked_restore_interval": env_int("ZEROMEMORY_BROKER_RESTORE_SECONDS", 10, minimum=1, maximum=3600),
    "unacked_restore_throttle": 1,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker went away keeps trying to reconnect for as long as it takes (Celery's default gives up after
# 100 attempts, ~45 minutes, and the worker exits), and lets the tasks it runs finish meanwhile: a run's claim in
# PostgreSQL, not its message, decides who works on it, so a run is neither cut short nor done twice (prove resilience,
# broker restart rounds). Setting the latter explicitly keeps it so when Celery 6 changes its default.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False

# --- clustering (ARCHITECTURE.md, "Jobs"; its calibration is the policy's) ------------------------------------
# Merges (and knowledge-update decisions) written per transaction: one lease renewal, one lock, set-based inserts and
# one conditional UPDATE for the chunk (its webhook deliveries included). A chunk's PostgreSQL work (mostly inserting
# vectors into the HNSW index) is a burst searches wait behind on a small machine (bench search, 2 cores: search p99
# during a 10,000-memory run 200 ms at 250 a chunk, 110 ms at 50, before the worker's session was reniced); 100
# keeps a 10,000-memory job near 60 transactions.
ZEROMEMORY_CLUSTERING_WRITE_CHUNK = env_int("ZEROMEMORY_CLUSTERING_WRITE_CHUNK", 100, minimum=1, maximum=5_000)
# The daily fan-out gives users with fewer eligible episodes than this a shared task, up to this many episodes
# (and 50 runs) a task: a run of a few memories costs less than its own task (message, claim, database connection).
# 0 = a task per run.
ZEROMEMORY_CLUSTERING_BATCH_EPISODES = env_int("ZEROMEMORY_CLUSTERING_BATCH_EPISODES", 500, minimum=0,
                                               maximum=100_000)

# --- reflection and LLM calls (ARCHITECTURE.md, "Jobs") ---------------------------------------------------------------
# Model resolution: ZEROMEMORY_REFLECTION_MODEL, then the tenant's ranked allowed models (first whose provider
# credentials are configured), then the default: "builtin:extractive" (deterministic, no network).
ZEROMEMORY_REFLECTION_MODEL = os.environ.get("ZEROMEMORY_REFLECTION_MODEL", "").strip()
# The model used when neither the variable above nor the tenant's allowed models name one.
ZEROMEMORY_DEFAULT_REFLECTION_MODEL = env_str("ZEROMEMORY_DEFAULT_REFLECTION_MODEL", "builtin:extractive")
# Optional OpenAI-compatible endpoint and key for the LLM (e.g. a local vLLM/Ollama server); otherwise litellm
# reads the provider's own variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).
ZEROMEMORY_LLM_API_BASE = os.environ.get("ZEROMEMORY_LLM_API_BASE", "").strip() or None
# The key for that endpoint.
ZEROMEMORY_LLM_API_KEY = os.environ.get("ZEROMEMORY_LLM_API_KEY", "").strip() or None
# Seconds one LLM call may take.
ZEROMEMORY_LLM_TIMEOUT_SECONDS = env_float("ZEROMEMORY_LLM_TIMEOUT_SECONDS", 60.0, minimum=0.1, maximum=600.0)
# Attempts per call on 429 / 5xx / timeouts / connection errors, with exponential backoff and jitter.
ZEROMEMORY_LLM_ATTEMPTS = env_int("ZEROMEMORY_LLM_ATTEMPTS", 4, minimum=1, maximum=10)
# The first wait between two attempts (it grows exponentially).
ZEROMEMORY_LLM_BACKOFF_SECONDS = env_float("ZEROMEMORY_LLM_BACKOFF_SECONDS", 2.0, minimum=0.0, maximum=60.0)
# LLM calls made at once.
ZEROMEMORY_LLM_CONCURRENCY = env_int("ZEROMEMORY_LLM_CONCURRENCY", 3, minimum=1, maximum=32)
# The longest answer an LLM call may give, in tokens.
ZEROMEMORY_LLM_MAX_TOKENS = env_int("ZEROMEMORY_LLM_MAX_TOKENS", 1200, minimum=100, maximum=32_000)
# The reflect endpoint waits this long for its run before answering 202 with the run id.
ZEROMEMORY_REFLECT_WAIT_SECONDS = env_float("ZEROMEMORY_REFLECT_WAIT_SECONDS", 25.0, minimum=0.0, maximum=300.0)

# --- lifecycle (ARCHITECTURE.md, "Jobs"; its thresholds are the policy's) -------------------------------------
# Memories archived or deleted per transaction.
ZEROMEMORY_LIFECYCLE_BATCH = env_int("ZEROMEMORY_LIFECYCLE_BATCH", 1000, minimum=1, maximum=100_000)

# --- webhooks ---------------------------------------------------------------------------------------------------
# Seconds a webhook receiver has to answer.
ZEROMEMORY_WEBHOOK_TIMEOUT_SECONDS = env_float("ZEROMEMORY_WEBHOOK_TIMEOUT_SECONDS", 10.0, minimum=0.1,
                                               maximum=120.0)
# Deliveries of one event tried before it is marked failed.
ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS = env_int("ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1, maximum=50)
# The first retry delay of a failed delivery (doubles on each retry).
ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS = env_float("ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS", 30.0, minimum=0.0,
                                               maximum=3600.0)

# --- API limits -------------------------------------------------------------------------------------------------
# Requests per API key per window (0 = no limit); past it: 429 with Retry-After.
ZEROMEMORY_RATE_LIMIT_REQUESTS = env_int("ZEROMEMORY_RATE_LIMIT_REQUESTS", 1200, minimum=0, maximum=10_000_000)
# The rate limit's window, in seconds.
ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = env_int("ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS", 60, minimum=1, maximum=86_400)
# Memories dated further in the future than this are refused (a far-future date would pin the "current session").
ZEROMEMORY_MAX_FUTURE_SECONDS = env_int("ZEROMEMORY_MAX_FUTURE_SECONDS", 86_400, minimum=0, maximum=10 * 365 * 86_400)
# A memory's metadata (zeromem/api/limits.py) is returned with it in every list and search answer: 16 KiB keeps a
# 500-memory page under 10 MB. A larger value answers 422 naming the field.
ZEROMEMORY_MAX_METADATA_BYTES = env_int("ZEROMEMORY_MAX_METADATA_BYTES", 16_384, minimum=2, maximum=1024 * 1024)
# The shape limits of metadata are fixed, not read from the environment: they bound the work of checking a value,
# while the byte cap above is what a deployment sizes. (Tests and the security proof set them as Django settings.)
# Nesting depth: the LangGraph store nests an item's value three levels down (metadata.langgraph.value), ten
# leaves it seven.
ZEROMEMORY_MAX_METADATA_DEPTH = 10
# Keys counted at every depth.
ZEROMEMORY_MAX_METADATA_KEYS = 256
# Characters of one string inside metadata.
ZEROMEMORY_MAX_METADATA_STRING_CHARS = 4000

# --- runs -------------------------------------------------------------------------------------------------------
# Deployment knobs, not job policy: how a dead worker's run is noticed (released and requeued by the sweep every
# 15 s or by any trigger, within STALE + 15 s).
if "ZEROMEMORY_RUN_LEASE_SECONDS" in os.environ:
    raise ImproperlyConfigured("ZEROMEMORY_RUN_LEASE_SECONDS is gone: a run's worker now proves it is alive with a "
                               "heartbeat; set ZEROMEMORY_RUN_STALE_SECONDS (and ZEROMEMORY_RUN_HEARTBEAT_SECONDS)")
# While a worker holds a run, a thread of its process stamps the run's heartbeat this often (each write too).
ZEROMEMORY_RUN_HEARTBEAT_SECONDS = env_float("ZEROMEMORY_RUN_HEARTBEAT_SECONDS", 5.0, minimum=0.1, maximum=600.0)
# A run whose heartbeat is older than this lost its worker; at least 3 heartbeats, so a database blip or a stalled
# process never declares a live worker dead.
ZEROMEMORY_RUN_STALE_SECONDS = env_float("ZEROMEMORY_RUN_STALE_SECONDS", 30.0, minimum=1.0, maximum=3600.0)
if ZEROMEMORY_RUN_STALE_SECONDS < 3 * ZEROMEMORY_RUN_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        f"ZEROMEMORY_RUN_STALE_SECONDS ({ZEROMEMORY_RUN_STALE_SECONDS:g}) must be at least 3 heartbeats "
        f"(ZEROMEMORY_RUN_HEARTBEAT_SECONDS = {ZEROMEMORY_RUN_HEARTBEAT_SECONDS:g}): one late beat must not declare "
        "a live worker dead")
# First retry delay of a reflection task whose LLM was unavailable (doubles on each retry, at most an hour).
ZEROMEMORY_LLM_RETRY_SECONDS = env_int("ZEROMEMORY_LLM_RETRY_SECONDS", 30, minimum=0, maximum=3600)

# --- metrics ----------------------------------------------------------------------------------------------------
# Bearer token for GET /metrics (Prometheus); empty = the endpoint answers 403.
ZEROMEMORY_METRICS_TOKEN = os.environ.get("ZEROMEMORY_METRICS_TOKEN", "").strip()

# --- the policy -------------------------------------------------------------------------------------------------
# Algorithm calibration (cluster floors, merge lengths, reflection sizes, search weights, lifecycle thresholds,
# canaries) is the policy, with defaults in code and overrides per tenant (zeromem/core/domain/policy.py). A variable
# that moved there would now be silently ignored: start-up refuses it and says where it went.
_moved = [field for field in policy_fields() if field.moved_from and field.moved_from in os.environ]
if _moved:
    raise ImproperlyConfigured("; ".join(field.moved_message() for field in _moved) + ". Unset the variable.")
