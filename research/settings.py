"""Django settings. Everything deployment-specific comes from the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url

from research.env import env_bool, env_float, env_int, env_json, env_list, env_str
from research.runtime import default_redis_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
# Production (SECURE_PRODUCTION=1) never falls back to the dev key: an unset SECRET_KEY stops the app.
# The dev key starts with "django-insecure-", so `check --deploy` flags it wherever it is used.
SECRET_KEY = env_str("SECRET_KEY", "") or (
    "django-insecure-dev-key-change-me-0123456789abcdefghijklmnopqrstuvwxyz"
    if (DEBUG or env_bool("DEV_MODE", True)) and not env_bool("SECURE_PRODUCTION", False)
    else ""
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "research.jobs",
    "research.knowledge",
    "research.api",
    "axes",
]

MIDDLEWARE = [
    "research.jobs.web.middleware.InvalidPathMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Turns a lock-out flagged by the axes backend into the 429 page (research/ratelimit.py).
    "axes.middleware.AxesMiddleware",
    "research.ratelimit.LoginLimitReachedMiddleware",
    # A throttle whose counter (Redis) cannot be reached answers 503 + Retry-After, never 500 (fails closed).
    "research.ratelimit.CounterUnavailableMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "research.jobs.web.middleware.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "research.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "research.jobs.web.context_processors.site",
            ],
        },
    },
]
ASGI_APPLICATION = "research.asgi.application"
WSGI_APPLICATION = None

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"), conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's backend, but the file is created 0600 (research/sqlite3/base.py).
    DATABASES["default"]["ENGINE"] = "research.sqlite3"
    # WAL + a busy timeout let the web server and several workers share one file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
if env_str("TEST_DB_NAME", ""):
    # Tests share a file database with the worker and web processes they start.
    DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DB_NAME", "")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "job_list"
LOGOUT_REDIRECT_URL = "login"
SIGNUP_ENABLED = env_bool("SIGNUP_ENABLED", True)

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True  # serve static/ without collectstatic on one machine
MEDIA_ROOT = Path(env_str("OUTPUTS_DIR", str(BASE_DIR / "outputs"))).resolve()
MEDIA_URL = "/media-not-served/"
# Files (artifacts, figures, uploads, knowledge-base documents) go through Django's storage API, so web
# and workers on different hosts share them: the local disk under OUTPUTS_DIR by default, an
# S3-compatible bucket (MinIO, S3, ...) with STORAGE_BACKEND=s3. OUTPUTS_DIR then holds only temp files.
STORAGE_BACKEND = env_str("STORAGE_BACKEND", "filesystem")  # filesystem | s3
if STORAGE_BACKEND == "s3":
    _default_storage: dict[str, Any] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env_str("S3_BUCKET", "research"),
            "endpoint_url": env_str("S3_ENDPOINT_URL", "") or None,
            "access_key": env_str("S3_ACCESS_KEY_ID", ""),
            "secret_key": env_str("S3_SECRET_ACCESS_KEY", ""),
            "region_name": env_str("S3_REGION", "us-east-1"),
            "addressing_style": "path",  # MinIO and other self-hosted servers
            "signature_version": "s3v4",
            "default_acl": None,
            "querystring_auth": True,
            "querystring_expire": 300,
            "file_overwrite": True,  # a re-render replaces its file under the same name
        },
    }
else:
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage",
                        "OPTIONS": {"allow_overwrite": True}}  # location: MEDIA_ROOT
STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- Redis, Celery, Channels -------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "") or default_redis_url(BASE_DIR)
REDIS_EMBEDDED = not env_str("REDIS_URL", "")

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # redis-py 8 reads with a 5 s socket timeout by default, the same as channels_redis's 5 s blocking
        # pop: under load the pop's empty reply lands just after 5 s and the consumer dies (close 1011).
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}], "capacity": 5000, "expiry": 60},
    }
}

# The rate-limit counters must be shared by every web process: Redis (INCR is atomic).
RATELIMIT_CACHE_URL = env_str("RATELIMIT_CACHE_URL", "") or REDIS_URL
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 200}},
    "ratelimit": (
        {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ratelimit"}
        if RATELIMIT_CACHE_URL.startswith("locmem:")
        # Django's Redis cache raising CounterUnavailable when Redis cannot be reached (research/ratelimit.py),
        # with timeouts so a Redis that hangs refuses requests in seconds instead of holding them.
        else {"BACKEND": "research.ratelimit.CounterCache", "LOCATION": RATELIMIT_CACHE_URL,
              "OPTIONS": {"socket_connect_timeout": 3, "socket_timeout": 5}}
    ),
}
RATELIMIT_USE_CACHE = "ratelimit"

# Login throttling (django-axes) hooks authenticate() itself: the site login, the admin login and any
# other path that checks a password count failures on the same Redis counter as the other limits.
# LOGIN_RATE "N/window": after N failures of one user name from one address within the window, that pair
# (and only that pair) gets 429 until the window has passed; the owner elsewhere still signs in.
# research.logins slows wider guessing (one address, many names; one name, many addresses) with a
# growing delay instead of a lock (docs/operations.md, "Sign-in").
AUTHENTICATION_BACKENDS = ["research.logins.LoginSlowdownBackend", "axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_CACHE = "ratelimit"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # one combined key, never the name or address alone
AXES_FAILURE_LIMIT = "research.ratelimit.login_failure_limit"
AXES_COOLOFF_TIME = "research.ratelimit.login_cool_off"
AXES_LOCKOUT_CALLABLE = "research.ratelimit.login_lockout_response"
AXES_CLIENT_IP_CALLABLE = "research.ratelimit.client_ip"
AXES_USERNAME_CALLABLE = "research.ratelimit.login_username"
AXES_RESET_ON_SUCCESS = False  # a success does not clear the count (as the fixed window before axes)
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a refused attempt does not re-arm the lock-out
LOGIN_ADDRESS_RATE = env_str("LOGIN_ADDRESS_RATE", "100/h")  # failures from one address before it is slowed
LOGIN_NAME_RATE = env_str("LOGIN_NAME_RATE", "30/h")  # failures on one name before failing addresses are slowed
LOGIN_DELAY_MAX_S = env_int("LOGIN_DELAY_MAX_S", 900)  # the growing delay (1, 2, 4, … s) stops growing here
AXES_VERBOSE = False

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_SOFT_TIME_LIMIT", 900)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_HARD_TIME_LIMIT", 960)
# Must exceed the hard limit, or Redis re-delivers tasks that are still running.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 1200)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = "agents"
# Knowledge-base indexing has its own queue (fair share, issue 34): uploads never wait behind research units,
# nor research behind a batch of uploads.
CELERY_TASK_ROUTES = {"research.jobs.tasks.render_output": {"queue": "render"},
                      "research.knowledge.tasks.document_index": {"queue": "kb"}}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_ALWAYS_EAGER = False
# Takeover of a dead worker's units (docs/operations.md, "Takeover"): a lease of STEP_LEASE_S renewed every
# quarter of it, the reaper every REAPER_INTERVAL_S: a unit is claimed again at most lease + interval
# (+ the claim) after its worker died. The fault test runs with these defaults and asserts <= 15 s.
DEFAULT_STEP_LEASE_S = 8
DEFAULT_REAPER_INTERVAL_S = 2.0
REAPER_INTERVAL_S = env_float("REAPER_INTERVAL_S", DEFAULT_REAPER_INTERVAL_S)
CELERY_BEAT_SCHEDULE = {
    "reap-stale-work": {
        "task": "research.jobs.tasks.reap_stale_work",
        "schedule": REAPER_INTERVAL_S,
    },
}
# Beat runs the reaper in its own process (research/beat.py) rather than queueing it behind busy pool slots.
CELERY_BEAT_SCHEDULER = "research.beat:Scheduler"
BEAT_HEARTBEAT_FILE = env_str("BEAT_HEARTBEAT_FILE", "")  # touched by each reaper run; read by the healthcheck

# --- Jobs and agents -----------------------------------------------------------
JOB_MAX_STEPS = env_int("JOB_MAX_STEPS", 12)
JOB_DEFAULT_STEPS = env_int("JOB_DEFAULT_STEPS", 5)
JOB_MAX_REPLANS = env_int("JOB_MAX_REPLANS", 5)
JOB_WALL_TIME_S = env_int("JOB_WALL_TIME_S", 3600)
JOB_TOKEN_BUDGET = env_int("JOB_TOKEN_BUDGET", 2_000_000)
JOB_REVIEW_TIMEOUT_S = env_int("JOB_REVIEW_TIMEOUT_S", 0)  # 0 = wait forever
JOB_STEP_CONCURRENCY = env_int("JOB_STEP_CONCURRENCY", 0)  # 0 = unlimited
JOB_CREATE_RATE = env_str("JOB_CREATE_RATE", "30/h")  # cost units (a heavy job with k runs: k) per sliding hour
# Fair share (research/jobs/fairness.py): per account, jobs running at once and queued+running steps and
# heavy runs over all its jobs; the rest wait in order. 0 = no cap.
FAIR_USER_RUNNING_JOBS = env_int("FAIR_USER_RUNNING_JOBS", 3)
FAIR_USER_RUNNING_UNITS = env_int("FAIR_USER_RUNNING_UNITS", 4)
API_RATE = env_str("API_RATE", "120/m")  # API requests per token (django-ninja throttle)
SITE_URL = env_str("SITE_URL", "")  # the app's public address, for links the MCP server returns
# Rate limits (research/ratelimit.py): "N/s|m|h|d" or "N/15m"; counted per account (per IP when signed out).
RERENDER_RATE = env_str("RERENDER_RATE", "30/h")
REPORT_EDIT_RATE = env_str("REPORT_EDIT_RATE", "60/h")
# Report edits and live previews up to this many characters are checked and rendered on the web thread;
# a longer edit is checked by a worker (research/jobs/services.py: report_edit_submit).
REPORT_CHECK_INLINE_CHARS = env_int("REPORT_CHECK_INLINE_CHARS", 50_000)
KB_UPLOAD_RATE = env_str("KB_UPLOAD_RATE", "60/h")
LOGIN_RATE = env_str("LOGIN_RATE", "10/15m")  # failed logins per (user name, IP) pair (django-axes)
SIGNUP_RATE = env_str("SIGNUP_RATE", "10/h")  # sign-ups per IP
PREVIEW_RATE = env_str("PREVIEW_RATE", "600/h")  # live report previews per account
FOLLOWUP_RATE = env_str("FOLLOWUP_RATE", "30/h")  # follow-up questions per account (web, API, MCP)
# Every other state-changing request (cancel, retry, delete, plan review, sign-out, the admin, …).
WRITE_RATE = env_str("WRITE_RATE", "600/h")
RATELIMIT_IP_HEADER = env_str("RATELIMIT_IP_HEADER", "")  # e.g. HTTP_X_REAL_IP behind a trusted proxy
STEP_MAX_ROUNDS = env_int("STEP_MAX_ROUNDS", 8)
STEP_TOKEN_BUDGET = env_int("STEP_TOKEN_BUDGET", 200_000)
STEP_TIME_BUDGET_S = env_int("STEP_TIME_BUDGET_S", 600)
STEP_LEASE_S = env_int("STEP_LEASE_S", DEFAULT_STEP_LEASE_S)
STEP_MAX_ATTEMPTS = env_int("STEP_MAX_ATTEMPTS", 3)
# A queued unit not picked up within this many seconds is re-sent (its message may have been lost,
# e.g. when Redis restarted without persistence). Duplicates are harmless: claims are idempotent.
STEP_QUEUE_GRACE_S = env_int("STEP_QUEUE_GRACE_S", 120)
DEFAULT_ENGINE = env_str("DEFAULT_ENGINE", "auto")  # auto | llm | offline
# An event whose type or payload research/jobs/event_types.py does not declare: refused (on in the tests,
# and in the processes they start) or only logged as an error (off: a live job never fails over it).
EVENTS_STRICT = env_bool("EVENTS_STRICT", False)

LLM_BASE_URL = env_str("LLM_BASE_URL", "http://127.0.0.1:8001/v1")
LLM_API_KEY = env_str("LLM_API_KEY", "EMPTY")
LLM_MODEL = env_str("LLM_MODEL", "Qwen/Qwen3-30B-A3B-Instruct-2507")
LLM_REASONING_MODEL = env_str("LLM_REASONING_MODEL", "")
LLM_PROFILE = env_str("LLM_PROFILE", "qwen3")
LLM_CONTEXT_WINDOW = env_int("LLM_CONTEXT_WINDOW", 0)  # 0 = ask the server
# The model as a second opinion on cited claims the lexical check cannot pass (llm engine; one short
# call per such claim, at most 20 per report). Off: such claims are only marked "(unverified)".
VERIFY_MODEL_JUDGE = env_bool("VERIFY_MODEL_JUDGE", True)
LLM_TIMEOUT_S = env_float("LLM_TIMEOUT_S", 120.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 5)

SEARCH_PROVIDERS = env_list("SEARCH_PROVIDERS", ["searxng", "duckduckgo", "knowledge"])
SEARXNG_URL = env_str("SEARXNG_URL", "http://127.0.0.1:8080")
TAVILY_API_KEY = env_str("TAVILY_API_KEY", "")
FETCH_ALLOW_LOOPBACK = env_bool("FETCH_ALLOW_LOOPBACK", False)
MCP_SERVERS = env_json("MCP_SERVERS", [])
SANDBOX_TIMEOUT_S = env_int("SANDBOX_TIMEOUT_S", 30)
SANDBOX_LIMITS = env_str("SANDBOX_LIMITS", "auto")  # auto | cgroup | watcher (docs/tools.md)
# The watcher (no cgroup) enforces the whole-tree limits after the fact and refuses sockets; production
# (SECURE_PRODUCTION=1) runs no code under it unless the operator opts in here.
SANDBOX_CGROUP_PARENT = env_str("SANDBOX_CGROUP_PARENT", "")  # a delegated cgroup v2 dir for per-run cgroups
SANDBOX_ALLOW_WEAK_LIMITS = env_bool("SANDBOX_ALLOW_WEAK_LIMITS", not env_bool("SECURE_PRODUCTION", False))
TTS_BACKEND = env_str("TTS_BACKEND", "auto")  # auto | edge | espeak | flite

KB_MAX_UPLOAD_BYTES = env_int("KB_MAX_UPLOAD_BYTES", 20 * 1024 * 1024)
# Caps on indexing one document (a Celery task; research/knowledge/extract.py): a small PDF can expand
# into huge page contents (one stream reused by many pages) and take minutes of CPU.
KB_MAX_PDF_PAGES = env_int("KB_MAX_PDF_PAGES", 1000)
KB_MAX_DECOMPRESSED_BYTES = env_int("KB_MAX_DECOMPRESSED_BYTES", 32 * 1024 * 1024)  # page contents, summed
KB_MAX_TEXT_CHARS = env_int("KB_MAX_TEXT_CHARS", 5_000_000)
KB_INDEX_TIME_S = env_int("KB_INDEX_TIME_S", 120)
# Render budgets (research/render/budgets.py): an edit over them is refused with the reason.
REPORT_MAX_HEADINGS = env_int("REPORT_MAX_HEADINGS", 300)
REPORT_MAX_TABLE_CELLS = env_int("REPORT_MAX_TABLE_CELLS", 3000)
# Bytes of documents one account may send to extraction in a sliding hour (per-user budget; each file has its own).
KB_USER_EXTRACT_BYTES_PER_H = env_int("KB_USER_EXTRACT_BYTES_PER_H", 200 * 1000 * 1000)
# Documents of one account being extracted at once (the rest wait in order; 0 = no cap).
KB_USER_INDEXING_AT_ONCE = env_int("KB_USER_INDEXING_AT_ONCE", 2)
KB_INDEX_MAX_ATTEMPTS = env_int("KB_INDEX_MAX_ATTEMPTS", 2)  # deliveries whose worker was lost
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Request bodies are counted as they stream in (research/jobs/web/asgi_limits.py): knowledge-base uploads
# may carry the upload limit (+ slack), everything else at most this many bytes; larger ones get 413.
REQUEST_MAX_BODY_BYTES = env_int("REQUEST_MAX_BODY_BYTES", 2_621_440)  # 2.5 MiB

# --- Security -------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG and env_bool("SECURE_PRODUCTION", False):
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # container health checks speak plain HTTP on loopback
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"httpx": {"level": "WARNING"}, "daphne": {"level": "WARNING"}},
}
# Every job status move, one line each ("transition JOB FROM TO"), appended to this file when set.
JOB_TRANSITIONS_LOG = env_str("JOB_TRANSITIONS_LOG", "")
if JOB_TRANSITIONS_LOG:
    LOGGING["handlers"]["transitions"] = {  # type: ignore[index]
        "class": "logging.FileHandler", "filename": JOB_TRANSITIONS_LOG, "formatter": "bare"}
    LOGGING["formatters"]["bare"] = {"format": "%(message)s"}  # type: ignore[index]
    LOGGING["loggers"]["research.jobs.transitions"] = {  # type: ignore[index]
        "handlers": ["transitions"], "level": "INFO"}
