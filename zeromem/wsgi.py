import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "zeromem.settings")
application = get_wsgi_application()


def _load_what_requests_use() -> None:
    """Django imports the URLconf (views, API schemas, metrics) on the first request, and the broker client and
    the local embedding model load on first use: ~38,000 objects that, loaded after the freeze below, every full
    collection scanned (10-35 ms pauses every ~2 s in a busy web process). Search reads its question with spaCy:
    its pipeline is ~46,000 more (a full collection ~13 ms), loaded here by reading a question as search does."""
    from zeromem.core.adapters.embeddings import embedder_preload
    from zeromem.core.events import redis_client
    from zeromem.language.default import DefaultReader

    get_resolver().url_patterns  # noqa: B018 (the property imports the URLconf)
    redis_client()
    embedder_preload()
    DefaultReader().asks_now("What does a search read first?")


_load_what_requests_use()
# What the app loaded lives as long as the process: out of the garbage collector's reach, a full collection during a
# request scans only what requests made (it scanned every module, model and URL pattern before).
gc.freeze()
