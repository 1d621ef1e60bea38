"""The LLM gateway: the only module that calls an LLM (ARCHITECTURE.md, "Layers"), always through litellm.

- litellm is imported lazily (the import costs ~2.5 s and ~165 MB) with its local price map (no network).
- Retries with exponential backoff and jitter on 429, 5xx, timeouts and dropped connections (tenacity). When they
  run out: `LLMUnavailable` — the provider may be back later, so the task retries. Other provider errors
  (authentication, bad request): `LLMError` — retrying would not help. "The model found nothing" is not an
  error at all: callers get an empty result.
- `map_bounded` runs calls with bounded concurrency (default 3); callers write the results sequentially.
- Every completion carries its `Usage` (calls, tokens, cost) so runs and tenants can be charged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

BUILTIN_PREFIX = "builtin:"
T = TypeVar("T")
R = TypeVar("R")


class LLMError(Exception):
    """The provider refused the call for a reason a retry will not fix (credentials, bad request)."""


class LLMUnavailable(LLMError):
    """The provider did not answer usefully (429, 5xx, timeout, connection) even after retries: try later."""


@dataclass(frozen=True)
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens, self.cost_usd + other.cost_usd)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def split(self, weights: Sequence[int]) -> list[Usage]:
        """Shares of one call several scopes shared, in proportion to `weights` (their memories); the calls and
        the rounding remainders go to the largest share, so the shares add up to the whole."""
        total = sum(weights) or 1
        largest = max(range(len(weights)), key=lambda i: weights[i])
        shares = [Usage(0, self.prompt_tokens * w // total, self.completion_tokens * w // total,
                        self.cost_usd * w / total) for w in weights]
        rest = Usage(self.calls, self.prompt_tokens - sum(s.prompt_tokens for s in shares),
                     self.completion_tokens - sum(s.completion_tokens for s in shares), 0.0)
        shares[largest] = shares[largest] + rest
        return shares


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-list fetch at import
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def is_builtin(model: str) -> bool:
    return model.startswith(BUILTIN_PREFIX)


def model_configured(model: str) -> bool:
    """Whether a call to `model` can authenticate: built-in engines always; otherwise an explicit endpoint and
    key in settings, or the provider's credentials in the environment (as litellm reads them)."""
    if is_builtin(model):
        return True
    if settings.ZEROMEMORY_LLM_API_BASE and settings.ZEROMEMORY_LLM_API_KEY:
        return True
    return bool(_litellm().validate_environment(model=model).get("keys_in_environment"))


def _transient(exc: BaseException) -> bool:
    litellm = _litellm()
    retryable = (litellm.RateLimitError, litellm.Timeout, litellm.InternalServerError,
                 litellm.ServiceUnavailableError, litellm.BadGatewayError, litellm.APIConnectionError)
    return isinstance(exc, retryable) or int(getattr(exc, "status_code", 0) or 0) >= 500


def complete(*, model: str, messages: Sequence[dict[str, str]], json_mode: bool = True) -> Completion:
    """One chat completion with retries; raises LLMUnavailable or LLMError."""
    retrying = Retrying(stop=stop_after_attempt(settings.ZEROMEMORY_LLM_ATTEMPTS),
                        wait=wait_exponential_jitter(multiplier=settings.ZEROMEMORY_LLM_BACKOFF_SECONDS, max=60),
                        retry=retry_if_exception(_transient), reraise=True)
    try:
        response = retrying(_call, model, messages, json_mode)
    except Exception as exc:
        if _transient(exc):
            raise LLMUnavailable(f"{model}: {type(exc).__name__}: {str(exc)[:300]}") from exc
        raise LLMError(f"{model}: {type(exc).__name__}: {str(exc)[:300]}") from exc
    return Completion(text=_text_of(response), usage=_usage_of(response))


def _call(model: str, messages: Sequence[dict[str, str]], json_mode: bool) -> Any:
    options: dict[str, Any] = {"timeout": settings.ZEROMEMORY_LLM_TIMEOUT_SECONDS, "num_retries": 0,
                               "max_retries": 0, "max_tokens": settings.ZEROMEMORY_LLM_MAX_TOKENS,
                               "temperature": 0, "drop_params": True}
    if json_mode:
        options["response_format"] = {"type": "json_object"}
    if settings.ZEROMEMORY_LLM_API_BASE:
        options["api_base"] = settings.ZEROMEMORY_LLM_API_BASE
    if settings.ZEROMEMORY_LLM_API_KEY:
        options["api_key"] = settings.ZEROMEMORY_LLM_API_KEY
    return _litellm().completion(model=model, messages=list(messages), **options)


def _text_of(response: Any) -> str:
    choices = getattr(response, "choices", None) or []
    content = choices[0].message.content if choices else None
    return content or ""


def _usage_of(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    try:
        cost = float(_litellm().completion_cost(completion_response=response) or 0.0)
    except Exception:  # a model missing from the price map costs "unknown": count it as 0, keep the tokens
        cost = 0.0
    return Usage(calls=1, prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                 completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0), cost_usd=cost)


def map_bounded(function: Callable[[T], R], items: Sequence[T], *, concurrency: int | None = None
                ) -> Iterator[R | Exception]:
    """function(item) for each item, at most `concurrency` at a time, yielded in input order; an exception is
    yielded in place of its result so one failed call does not hide the others."""
    workers = max(1, min(concurrency or settings.ZEROMEMORY_LLM_CONCURRENCY, len(items) or 1))

    def guarded(item: T) -> R | Exception:
        try:
            return function(item)
        except Exception as exc:
            return exc

    if workers == 1:
        yield from (guarded(item) for item in items)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:
        yield from pool.map(guarded, items)
