"""Python client for the zeromem memory API: `Zeromem` (blocking) and `AsyncZeromem` (asyncio), typed results and
errors, retries with backoff, idempotent writes."""

__version__ = "0.1.0"

from zeromem_client._async import AsyncZeromem  # noqa: E402
from zeromem_client._sync import Zeromem  # noqa: E402
from zeromem_client.errors import (  # noqa: E402
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    ZeromemError,
)
from zeromem_client.models import (  # noqa: E402
    AddResult,
    Context,
    ContextMemory,
    ContextProfile,
    Erasure,
    Feedback,
    KeyedResult,
    Memory,
    MemoryHistory,
    Profile,
    ProfileItem,
    ReflectResult,
    Run,
    RunProgress,
    SearchResult,
    SessionEnd,
    Source,
    Usage,
)

__all__ = [
    "APIConnectionError", "APITimeoutError", "AddResult", "AsyncZeromem", "AuthenticationError", "ConflictError",
    "Context", "ContextMemory", "ContextProfile", "Erasure", "Feedback", "KeyedResult", "Memory", "MemoryHistory",
    "NotFoundError", "Profile", "ProfileItem", "RateLimitError", "ReflectResult", "Run", "RunProgress", "SearchResult",
    "ServerError", "SessionEnd", "Source", "Usage", "ValidationError", "Zeromem", "ZeromemError", "__version__",
]
