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


DEBUG = env_bool("ZEROMEMORY_DEBUG", False)
EMBEDDED_SERVICES = not os.environ.get("DATABASE_URL") or os.environ.get("ZEROMEM_EMBEDDED") == "1"
SECRET_KEY = os.environ.get("ZEROMEMORY_SECRET_KEY", "")
if SECRET_KEY and len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("ZEROMEMORY_SECRET_KEY must be at least 32 characters")
if not SECRET_KEY:
    if not (DEBUG or EMBEDDED_SERVICES):
        raise ImproperlyConfigured("ZEROMEMORY_SECRET_KEY must be set when running against a real database")
    SECRET_KEY = "dev-only-insecure-key-for-the-embedded-services"  # noqa: S105 - local mode only
ALLOWED_HOSTS = [h.strip() for h in env_str("ZEROMEMORY_ALLOWED_HOSTS", "localhost,127.0.0.1,testserver").split(",")
                 if h.strip()]

_embedded = embedded_urls()
DATABASES = {"default": database_config(env_str("DATABASE_URL", _embedded.database_url))}
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

# --- zeromem ---------------------------------------------------------------------------------------------
# Embedding: "builtin:minilm" (local all-MiniLM-L6-v2, int8 ONNX), "builtin:hash" (deterministic, meaning-free;
# tests), or any litellm embedding model name. The dimension is fixed into the schema at migrate time.
ZEROMEMORY_EMBEDDING_MODEL = env_str("ZEROMEMORY_EMBEDDING_MODEL", "builtin:minilm")
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
ZEROMEMORY_MAX_CONTENT_CHARS = env_int("ZEROMEMORY_MAX_CONTENT_CHARS", 16_000, minimum=100, maximum=1_000_000)
ZEROMEMORY_MAX_BATCH = env_int("ZEROMEMORY_MAX_BATCH", 1000, minimum=1, maximum=10_000)
# Hybrid search: weight of the cosine similarity against the max-normalised BM25 score.
ZEROMEMORY_SEARCH_VECTOR_WEIGHT = env_float("ZEROMEMORY_SEARCH_VECTOR_WEIGHT", 0.5, minimum=0.0, maximum=1.0)
# BM25 length normalisation (b): 0 ignores length, 1 divides fully by it.
ZEROMEMORY_SEARCH_BM25_B = env_float("ZEROMEMORY_SEARCH_BM25_B", 0.75, minimum=0.0, maximum=1.0)
# Hits scored at or below this are not returned. At the default 0 that drops exactly the hits that share no word
# with the query and point away from it (cosine <= 0): noise that filled the top k, not answers. A higher floor
# also drops weak hits; the retrieval safety net's canaries showed lost recall at 0.02, so it stays opt-in.
ZEROMEMORY_SEARCH_MIN_SCORE = env_float("ZEROMEMORY_SEARCH_MIN_SCORE", 0.0, minimum=0.0, maximum=1.0)
# How long a web process keeps an authenticated API key: a revoked key is refused everywhere within this time.
ZEROMEMORY_KEY_CACHE_SECONDS = env_float("ZEROMEMORY_KEY_CACHE_SECONDS", 5.0, minimum=0.0, maximum=300.0)
ZEROMEMORY_SEARCH_POOL = env_int("ZEROMEMORY_SEARCH_POOL", 200, minimum=10, maximum=5000)
# An assistant's turn (role "assistant") ranks at this share of its score: what the user said about themselves is
# the memory; the assistant's long generic answers share the question's words and would crowd it out (LongMemEval
# knowledge updates, ARCHITECTURE.md "Quality"). 1 ranks them alike.
ZEROMEMORY_SEARCH_ASSISTANT_WEIGHT = env_float("ZEROMEMORY_SEARCH_ASSISTANT_WEIGHT", 0.7, minimum=0.0, maximum=1.0)

# The Celery worker lowers its own CPU priority by this much (os.nice) at start: consolidation yields the CPU to the
# web tier's searches on a shared machine. 0 = same priority.
ZEROMEMORY_WORKER_NICE = env_int("ZEROMEMORY_WORKER_NICE", 10, minimum=0, maximum=19)
# ... and runs under Linux's SCHED_IDLE policy (its database sessions too, where it may renice them): a search
# takes a CPU the worker holds at once. Off: nice alone.
ZEROMEMORY_WORKER_SCHED_IDLE = env_bool("ZEROMEMORY_WORKER_SCHED_IDLE", True)

# --- Celery ----------------------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
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

# --- clustering (ARCHITECTURE.md, "Jobs") -----------------------------------------------------------------------------
# The cosine floor is calibrated for the configured embedder: all-MiniLM-L6-v2 scores paraphrases 0.60–0.95
# and unrelated pairs <= 0.30 (the commonly published 0.75 misses 3 of 10 paraphrases with this model).
# Measured with `bench calibrate` (same-fact pairs 0.81–0.96, related 0.25–0.72, unrelated <= 0.06) and tuned
# on LoCoMo with `evaluate locomo` together with the cluster size and merged length below (README).
ZEROMEMORY_CLUSTER_COSINE_FLOOR = env_float("ZEROMEMORY_CLUSTER_COSINE_FLOOR", 0.55, minimum=0.0, maximum=1.0)
ZEROMEMORY_CLUSTER_FACT_JACCARD = env_float("ZEROMEMORY_CLUSTER_FACT_JACCARD", 0.5, minimum=0.0, maximum=1.0)
ZEROMEMORY_CLUSTER_HUB_SHARE = env_float("ZEROMEMORY_CLUSTER_HUB_SHARE", 0.2, minimum=0.0, maximum=1.0)
# Union-find never grows a cluster past this (ARCHITECTURE.md caps it at 20). Small, tight clusters keep what an agent
# retrieves within a context budget as good as before clustering; at 20, LoCoMo budget recall fell by 0.02.
ZEROMEMORY_CLUSTER_MAX_SIZE = env_int("ZEROMEMORY_CLUSTER_MAX_SIZE", 4, minimum=2, maximum=20)
# A tag with this prefix names the window of a memory whose `window` field is empty ("window:outage"), so events that
# carry their window as a tag never cluster across windows. Per tenant: `Tenant.overrides["window_tag_prefix"]`.
ZEROMEMORY_WINDOW_TAG_PREFIX = os.environ.get("ZEROMEMORY_WINDOW_TAG_PREFIX", "window:").strip()  # "" = off
# A window with at least this many memories also gets one digest per clustering run that folds the window.
ZEROMEMORY_WINDOW_DIGEST_MIN = env_int("ZEROMEMORY_WINDOW_DIGEST_MIN", 10, minimum=2, maximum=100_000)
# A merged memory is dated by its newest source (what an agent sees): its members may span at most this many days,
# so it never presents a months-old statement as recent. 0 = no limit.
# Second level: episodes the first level clustered with nothing pair up within their session at this looser cosine
# (turns of one conversation about one thing, worded apart); 0 = off.
ZEROMEMORY_CLUSTER_SESSION_FLOOR = env_float("ZEROMEMORY_CLUSTER_SESSION_FLOOR", 0.3, minimum=0.0, maximum=1.0)
# Third level: what a run writes for one session (semantic memories and episodes left as said) folds together at
# this cosine of the members' mean vectors while the text fits ZEROMEMORY_MERGED_MAX_CHARS in one piece; 0 = off.
ZEROMEMORY_CLUSTER_FOLD_FLOOR = env_float("ZEROMEMORY_CLUSTER_FOLD_FLOOR", 0.15, minimum=0.0, maximum=1.0)
ZEROMEMORY_CLUSTER_MAX_SPAN_DAYS = env_int("ZEROMEMORY_CLUSTER_MAX_SPAN_DAYS", 30, minimum=0, maximum=36_500)
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
ZEROMEMORY_RECENCY_WINDOW_HOURS = env_int("ZEROMEMORY_RECENCY_WINDOW_HOURS", 48, minimum=0, maximum=24 * 365)
# Merged text stays within the embedder's input limit (all-MiniLM-L6-v2 reads ~1,000 characters).
# A merged text this long or shorter (a longer cluster becomes several memories); one member longer than
# this keeps up to the embedder's input limit (1,000 characters).
ZEROMEMORY_MERGED_MAX_CHARS = env_int("ZEROMEMORY_MERGED_MAX_CHARS", 350, minimum=100, maximum=1000)
# Two sentences of one speaker in a cluster, with the same values and a content word in common, say the same thing
# (the longer one is kept) when their vectors are at least this similar (MiniLM: same-fact pairs 0.81–0.95).
ZEROMEMORY_MERGE_PARAPHRASE_COSINE = env_float("ZEROMEMORY_MERGE_PARAPHRASE_COSINE", 0.85, minimum=0.5,
                                               maximum=1.0)

# --- reflection and LLM calls (ARCHITECTURE.md, "Jobs") ---------------------------------------------------------------
# Model resolution: ZEROMEMORY_REFLECTION_MODEL, then the tenant's ranked allowed models (first whose provider
# credentials are configured), then the default: "builtin:extractive" (deterministic, no network).
ZEROMEMORY_REFLECTION_MODEL = os.environ.get("ZEROMEMORY_REFLECTION_MODEL", "").strip()
ZEROMEMORY_DEFAULT_REFLECTION_MODEL = env_str("ZEROMEMORY_DEFAULT_REFLECTION_MODEL", "builtin:extractive")
# Optional OpenAI-compatible endpoint and key for the LLM (e.g. a local vLLM/Ollama server); otherwise litellm
# reads the provider's own variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).
ZEROMEMORY_LLM_API_BASE = os.environ.get("ZEROMEMORY_LLM_API_BASE", "").strip() or None
ZEROMEMORY_LLM_API_KEY = os.environ.get("ZEROMEMORY_LLM_API_KEY", "").strip() or None
ZEROMEMORY_LLM_TIMEOUT_SECONDS = env_float("ZEROMEMORY_LLM_TIMEOUT_SECONDS", 60.0, minimum=0.1, maximum=600.0)
# Attempts per call on 429 / 5xx / timeouts / connection errors, with exponential backoff and jitter.
ZEROMEMORY_LLM_ATTEMPTS = env_int("ZEROMEMORY_LLM_ATTEMPTS", 4, minimum=1, maximum=10)
ZEROMEMORY_LLM_BACKOFF_SECONDS = env_float("ZEROMEMORY_LLM_BACKOFF_SECONDS", 2.0, minimum=0.0, maximum=60.0)
ZEROMEMORY_LLM_CONCURRENCY = env_int("ZEROMEMORY_LLM_CONCURRENCY", 3, minimum=1, maximum=32)
ZEROMEMORY_LLM_MAX_TOKENS = env_int("ZEROMEMORY_LLM_MAX_TOKENS", 1200, minimum=100, maximum=32_000)
# Eligibility: an entity with this many unreflected inputs, a user with this many that carry no entity_id.
ZEROMEMORY_REFLECTION_ENTITY_THRESHOLD = env_int("ZEROMEMORY_REFLECTION_ENTITY_THRESHOLD", 10, minimum=1,
                                                 maximum=100_000)
ZEROMEMORY_REFLECTION_USER_THRESHOLD = env_int("ZEROMEMORY_REFLECTION_USER_THRESHOLD", 50, minimum=1,
                                               maximum=100_000)
# Each call: the BATCH most important of the WINDOW most recent inputs; the run repeats while MIN_REMAINING
# inputs remain, up to MAX_CALLS calls.
ZEROMEMORY_REFLECTION_WINDOW = env_int("ZEROMEMORY_REFLECTION_WINDOW", 50, minimum=1, maximum=1000)
ZEROMEMORY_REFLECTION_BATCH = env_int("ZEROMEMORY_REFLECTION_BATCH", 15, minimum=1, maximum=200)
ZEROMEMORY_REFLECTION_MIN_REMAINING = env_int("ZEROMEMORY_REFLECTION_MIN_REMAINING", 10, minimum=1, maximum=1000)
ZEROMEMORY_REFLECTION_MAX_CALLS = env_int("ZEROMEMORY_REFLECTION_MAX_CALLS", 10, minimum=1, maximum=1000)
# With an LLM, the entities of one user share calls of up to this many memories (at most BATCH of one entity):
# most entities have 10–20 eligible memories, and a call each would pay the prompt's overhead every time.
ZEROMEMORY_REFLECTION_SHARED_CALL = env_int("ZEROMEMORY_REFLECTION_SHARED_CALL", 40, minimum=1, maximum=400)
ZEROMEMORY_REFLECTION_MIN_CONFIDENCE = env_float("ZEROMEMORY_REFLECTION_MIN_CONFIDENCE", 0.6, minimum=0.0,
                                                 maximum=1.0)
# GET /profile: an item first said (valid_from, else first_seen) within this many days is "recent", an older one
# "static".
ZEROMEMORY_PROFILE_RECENT_DAYS = env_int("ZEROMEMORY_PROFILE_RECENT_DAYS", 30, minimum=1, maximum=36_500)
# The reflect endpoint waits this long for its run before answering 202 with the run id.
ZEROMEMORY_REFLECT_WAIT_SECONDS = env_float("ZEROMEMORY_REFLECT_WAIT_SECONDS", 25.0, minimum=0.0, maximum=300.0)
# With an LLM configured: a batched phase (10 memories a call) that fills kind and entities and proposes relations.
ZEROMEMORY_EXTRACTION_PHASE = env_bool("ZEROMEMORY_EXTRACTION_PHASE", False)

# --- lifecycle (ARCHITECTURE.md, "Jobs"); each is overridable per tenant in Tenant.overrides under the lower-case name
# after ZEROMEMORY_ (e.g. {"decay_half_life_days": 14, "purge_days": 7}) ------------------------------------------
# activation = importance × 2^(−days since last access (or creation) / half-life)
ZEROMEMORY_DECAY_HALF_LIFE_DAYS = env_float("ZEROMEMORY_DECAY_HALF_LIFE_DAYS", 30.0, minimum=0.1, maximum=36_500.0)
# Raw memories whose activation falls below this and whose importance is below the keep floor are archived.
ZEROMEMORY_ARCHIVE_THRESHOLD = env_float("ZEROMEMORY_ARCHIVE_THRESHOLD", 0.05, minimum=0.0, maximum=1.0)
ZEROMEMORY_KEEP_FLOOR = env_float("ZEROMEMORY_KEEP_FLOOR", 0.7, minimum=0.0, maximum=1.0)
# Consolidated episodic memories older than this with importance below RETENTION_IMPORTANCE are archived.
ZEROMEMORY_RETENTION_DAYS = env_float("ZEROMEMORY_RETENTION_DAYS", 90.0, minimum=0.0, maximum=36_500.0)
ZEROMEMORY_RETENTION_IMPORTANCE = env_float("ZEROMEMORY_RETENTION_IMPORTANCE", 0.5, minimum=0.0, maximum=1.0)
# Archived memories are deleted this long after archiving (provenance keeps their id and content hash).
ZEROMEMORY_PURGE_DAYS = env_float("ZEROMEMORY_PURGE_DAYS", 30.0, minimum=0.0, maximum=36_500.0)
ZEROMEMORY_LIFECYCLE_BATCH = env_int("ZEROMEMORY_LIFECYCLE_BATCH", 1000, minimum=1, maximum=100_000)
# Feedback moves reward_score this share of the way towards +1 (useful) or −1 (not useful).
ZEROMEMORY_FEEDBACK_STEP = env_float("ZEROMEMORY_FEEDBACK_STEP", 0.2, minimum=0.01, maximum=1.0)

# --- webhooks ---------------------------------------------------------------------------------------------------
ZEROMEMORY_WEBHOOK_TIMEOUT_SECONDS = env_float("ZEROMEMORY_WEBHOOK_TIMEOUT_SECONDS", 10.0, minimum=0.1,
                                               maximum=120.0)
ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS = env_int("ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1, maximum=50)
ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS = env_float("ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS", 30.0, minimum=0.0,
                                               maximum=3600.0)

# --- API limits -------------------------------------------------------------------------------------------------
# Requests per API key per window (0 = no limit); past it: 429 with Retry-After.
ZEROMEMORY_RATE_LIMIT_REQUESTS = env_int("ZEROMEMORY_RATE_LIMIT_REQUESTS", 1200, minimum=0, maximum=10_000_000)
ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = env_int("ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS", 60, minimum=1, maximum=86_400)
# Memories dated further in the future than this are refused (a far-future date would pin the "current session").
ZEROMEMORY_MAX_FUTURE_SECONDS = env_int("ZEROMEMORY_MAX_FUTURE_SECONDS", 86_400, minimum=0, maximum=10 * 365 * 86_400)

# --- runs -------------------------------------------------------------------------------------------------------
# Deployment knobs, not job policy: how a dead worker's run is noticed. While a worker holds a run, a thread of its
# process stamps the run's heartbeat every HEARTBEAT seconds (each write transaction does too); a run whose heartbeat
# is older than STALE seconds lost its worker: the sweep (every 15 s) or any trigger releases and requeues it, within
# STALE + 15 s. STALE leaves room for several missed beats (a database blip, a stalled process), never fewer than 3.
if os.environ.get("ZEROMEMORY_RUN_LEASE_SECONDS"):
    raise ImproperlyConfigured("ZEROMEMORY_RUN_LEASE_SECONDS is gone: a run's worker now proves it is alive with a "
                               "heartbeat; set ZEROMEMORY_RUN_STALE_SECONDS (and ZEROMEMORY_RUN_HEARTBEAT_SECONDS)")
ZEROMEMORY_RUN_HEARTBEAT_SECONDS = env_float("ZEROMEMORY_RUN_HEARTBEAT_SECONDS", 5.0, minimum=0.1, maximum=600.0)
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

# Retrieval safety net (issue 9): canary queries replayed before and after each clustering / reflection run;
# a drop in mean budget recall above the limit undoes the run. `evaluate` turns it off.
ZEROMEMORY_CANARIES = env_bool("ZEROMEMORY_CANARIES", True)
ZEROMEMORY_CANARY_MAX_DROP = env_float("ZEROMEMORY_CANARY_MAX_DROP", 0.05, minimum=0.0, maximum=1.0)
ZEROMEMORY_CANARY_SAMPLE = env_int("ZEROMEMORY_CANARY_SAMPLE", 20, minimum=0, maximum=500)
# Sampled canaries cost two searches each: a run samples at most one per memory it consolidates, and none when it
# consolidates fewer than this (an operator's own canaries always run).
ZEROMEMORY_CANARY_MIN_CONSOLIDATED = env_int("ZEROMEMORY_CANARY_MIN_CONSOLIDATED", 4, minimum=0, maximum=100_000)
