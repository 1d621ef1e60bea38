"""zeromem as MCP tools, for desktop and coding agents (`zeromem-mcp`, on the official `mcp` SDK's `MCPServer`).

Transports: stdio by default (what a desktop agent launches), streamable HTTP with `--http PORT` (endpoint
`http://HOST:PORT/mcp`, `--host` defaults to 127.0.0.1, where the SDK also turns on DNS-rebinding protection).

Who the tools act as depends on the transport. Over stdio, the one agent that launched the server: the key in
`ZEROMEM_API_KEY`. Over HTTP, each caller: a request must carry a zeromem API key as `Authorization: Bearer <key>`
(401 otherwise), the key is checked against zeromem (a cached answer for KEY_CHECK_TTL seconds), and the call's
tools use a client with that key, so a key scoped to one user stays on that user. `ZEROMEM_API_KEY` is never used
over HTTP: whoever reaches the port gets nothing without a key of their own. `ZEROMEM_URL` names the server either
way.

With `ZEROMEM_USER_ID` set every tool works on that one user and none takes a user argument (the model cannot
reach another user's memories through this server: a memory, run or profile of another user answers "no such
..."); without it, the tools that need a user take `user_id`.

Every tool answers a JSON object. A failure the model can act on (an API error, zeromem unreachable, an argument
outside its schema) comes back as an MCP tool error (`is_error`) carrying the API's message; the server keeps
serving.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime
from itertools import islice
from typing import Annotated, Any, Literal

import httpx
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AnyHttpUrl, BaseModel, Field

from zeromem_client import AsyncZeromem, Zeromem
from zeromem_client._core import BASE_URL_ENV, DEFAULT_BASE_URL
from zeromem_client.errors import APIConnectionError, AuthenticationError, ValidationError, ZeromemError
from zeromem_client.models import Memory, SearchResult

logger = logging.getLogger(__name__)

# How long zeromem's "yes, a valid key" is trusted before the key is checked again. A revoked key loses the data at
# once anyway: every tool call sends the caller's key to zeromem, which refuses it.
KEY_CHECK_TTL = 60.0

TOOL_NAMES = ("remember", "search_memories", "get_context", "get_profile", "list_memories", "get_memory",
              "update_memory", "delete_memory", "forget", "end_session", "reflect", "get_run", "why")

INSTRUCTIONS = """zeromem is this agent's long-term memory. Store what is worth keeping with `remember` (one fact,
preference, decision or outcome per call, in a self-contained sentence). Before answering a question that may
depend on the past, call `get_context` and use the block it returns, or `search_memories` to see individual
memories with their ids. Memories are consolidated in the background: similar episodes are merged into semantic
memories and per-entity profiles are reflected from them; `why` explains where a memory came from."""

# --- argument types (their descriptions are what the model reads) ------------------------------------------------

Text = Annotated[str, Field(min_length=1, description="The memory, as one self-contained statement.")]
UserId = Annotated[str, Field(min_length=1, max_length=200, description="The user whose memories these are.")]
OptionalUserId = Annotated[str | None, Field(min_length=1, max_length=200,
                                             description="Only this user's memories (default: every user).")]
EntityId = Annotated[str | None, Field(min_length=1, max_length=200, description=(
    "What the memory is about (a person, a project, a service). Omit for the user's own memories."))]
EntityFilter = Annotated[str | None, Field(min_length=1, max_length=200,
                                           description="Only memories about this entity.")]
SessionId = Annotated[str | None, Field(min_length=1, max_length=200, description=(
    "The conversation this comes from. The user's newest session is kept verbatim by consolidation."))]
Importance = Annotated[float | None, Field(ge=0.0, le=1.0, description=(
    "0-1: how much it matters (default 0.5). Important memories decay more slowly and are kept longer."))]
Namespace = Annotated[str, Field(min_length=1, max_length=100, description="A partition of the user's memories.")]
NamespaceFilter = Annotated[str | None, Field(min_length=1, max_length=100, description="Only this namespace.")]
Tags = Annotated[list[str] | None, Field(max_length=50, description="Free labels.")]
Query = Annotated[str, Field(min_length=1, max_length=4000, description="What to look for, in plain words.")]
TopK = Annotated[int, Field(ge=1, le=100, description="How many results, 1-100.")]
AsOf = Annotated[datetime | None, Field(description=(
    "Answer as the memory stood at this time (ISO 8601 with a time zone): what was true then, not now."))]
MemoryId = Annotated[str, Field(min_length=1, description="A memory id, as returned by the other tools.")]
RunId = Annotated[str, Field(min_length=1, description="A run id, as returned by end_session or reflect.")]
MemoryType = Literal["episodic", "working", "semantic"]
State = Literal["raw", "consolidated", "archived"]

BRIEF_FIELDS = ("memory_type", "state", "entity_id", "namespace", "session_id", "created_at", "updated_at",
                "valid_from", "valid_to", "consolidated_at", "superseded_by_id")


# --- answers ------------------------------------------------------------------------------------------------------

def brief(memory: Memory, score: float | None = None, labels: dict[str, Any] | None = None) -> dict[str, Any]:
    """A memory as a search or a list shows it: id, text, dates, state (and score). `labels`: what a search hit
    says about the memory beside it (state, valid_from / valid_to, superseded_by, consolidated_at)."""
    data = memory.model_dump(mode="json")
    if labels:
        data.update({("superseded_by_id" if k == "superseded_by" else k): v for k, v in labels.items()})
    out: dict[str, Any] = {"id": data["id"], "text": data["content"]}
    out.update({k: data[k] for k in BRIEF_FIELDS if data.get(k) is not None})
    if score is not None:
        out["score"] = round(score, 4)
    return out


def labels(hit: SearchResult) -> dict[str, Any]:
    """What the server says about a hit beyond the memory (fields this client's model may not know yet)."""
    return hit.model_dump(mode="json", include=set(hit.model_extra or ()))


def dump(model: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return data


def strings(values: list[MemoryType] | list[State] | None) -> list[str] | None:
    return [str(v) for v in values] if values else None


def error_text(exc: ZeromemError) -> str:
    """The API's message, with what the model needs to correct the call (the fields refused) or to wait."""
    text = exc.message
    if isinstance(exc, ValidationError) and exc.details:
        problems = "; ".join(f"{'.'.join(str(p) for p in d.get('loc', [])[-1:])}: {d.get('msg', '')}"
                             for d in exc.details if isinstance(d, dict))
        text = f"{text} ({problems})" if problems else text
    if exc.retry_after is not None:
        text += f" (retry after {exc.retry_after:.0f} s)"
    if isinstance(exc, APIConnectionError):
        return f"zeromem did not answer: {text}"
    return f"{text} [{exc.status} {exc.code}]" if exc.status is not None else text


def as_tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run `fn`, turning the client's errors into tool errors (the model reads the message, the server goes on)."""
    def call(**kwargs: Any) -> Any:
        try:
            return fn(**kwargs)
        except ZeromemError as exc:
            raise ToolError(error_text(exc)) from exc
    return with_signature(call, fn, inspect.signature(fn, eval_str=True))


def with_signature(wrapper: Callable[..., Any], fn: Callable[..., Any],
                   signature: inspect.Signature) -> Callable[..., Any]:
    """Give `wrapper` the name, description and (resolved) signature the SDK builds the tool's schema from."""
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**{n: p.annotation for n, p in signature.parameters.items()},
                               "return": signature.return_annotation}
    return wrapper


def without_user(fn: Callable[..., Any], user_id: str) -> Callable[..., Any]:
    """`fn` with its `user_id` parameter removed from the schema and always set to `user_id`."""
    signature = inspect.signature(fn, eval_str=True)
    if "user_id" not in signature.parameters:
        return fn
    kept = [p for name, p in signature.parameters.items() if name != "user_id"]

    def call(**kwargs: Any) -> Any:
        return fn(user_id=user_id, **kwargs)
    return with_signature(call, fn, signature.replace(parameters=kept))


# --- the tools ----------------------------------------------------------------------------------------------------

class Tools:
    """The tools' bodies. `connect()` answers the client of the call under way (the stdio agent's, or the HTTP
    caller's own key); `fixed_user`: the only user this server may touch (ZEROMEM_USER_ID)."""

    def __init__(self, connect: Callable[[], Zeromem], fixed_user: str | None = None) -> None:
        self.connect = connect
        self.fixed_user = fixed_user

    @property
    def client(self) -> Zeromem:
        return self.connect()

    def all(self) -> list[Callable[..., Any]]:
        return [getattr(self, name) for name in TOOL_NAMES]

    def mine(self, memory: Memory) -> Memory:
        """The memory, if this server may touch it (with ZEROMEM_USER_ID: only that user's)."""
        if self.fixed_user is not None and memory.user_id != self.fixed_user:
            raise ToolError("no such memory [404 not_found]")
        return memory

    def check_owner(self, memory_id: str) -> None:
        """Before a change: with ZEROMEM_USER_ID, refuse another user's memory (one extra read)."""
        if self.fixed_user is not None:
            self.mine(self.client.get(memory_id))

    def remember(self, content: Text, user_id: UserId, entity_id: EntityId = None, session_id: SessionId = None,
                 importance: Importance = None, namespace: Namespace = "global",
                 tags: Tags = None) -> dict[str, Any]:
        """Store one memory: a fact, preference, decision, observation or outcome worth keeping for later
        conversations. Write it as a self-contained sentence (who, what, when). Storing the same text again in the
        same session is harmless: it answers the id already stored. Answers the memory's id."""
        added = self.client.add(content, user_id=user_id, entity_id=entity_id, namespace=namespace,
                                session_id=session_id, importance=importance, tags=tags)
        return {"id": added.ids[0], "created": added.created == 1, "embedded": added.embedded == 1}

    def search_memories(self, query: Query, user_id: OptionalUserId = None, entity_id: EntityFilter = None,
                        namespace: NamespaceFilter = None, top_k: TopK = 10,
                        memory_types: list[MemoryType] | None = None, states: list[State] | None = None,
                        as_of: AsOf = None, include_history: bool = False) -> dict[str, Any]:
        """Search memories by meaning and keywords (hybrid BM25 + vector ranking), best first. Each result has the
        memory's id, text, type, state, dates and score. By default only active memories are searched: pass
        states ["raw", "consolidated"] to include episodes already merged into semantic memories, include_history
        true to include superseded versions, as_of to search the memories as they stood at a past time."""
        hits = self.client.search(query, user_id=user_id, entity_id=entity_id, namespace=namespace, top_k=top_k,
                                  memory_types=strings(memory_types), states=strings(states), as_of=as_of,
                                  include_history=include_history or None)
        return {"results": [brief(hit.memory, hit.score, labels(hit)) for hit in hits]}

    def get_context(self, query: Query, user_id: UserId, entity_id: EntityId = None,
                    namespace: Namespace = "global",
                    budget_chars: Annotated[int, Field(ge=100, le=50_000, description=(
                        "The most characters the block may take, 100-50,000."))] = 2000,
                    as_of: AsOf = None) -> dict[str, Any]:
        """The memory block to put in your prompt before answering `query`: the profile's summary and most
        confident items, then the most relevant memories, each whole, never longer than budget_chars. Answers
        `context` (the text to use) and the ids of the memories it holds."""
        ctx = self.client.context(query, user_id=user_id, entity_id=entity_id, namespace=namespace,
                                  budget_chars=budget_chars, as_of=as_of)
        return {"context": ctx.context, "chars": ctx.chars, "budget_chars": ctx.budget_chars,
                "memory_ids": [m.id for m in ctx.memories],
                "profile_version": ctx.profile.version if ctx.profile else None}

    def get_profile(self, user_id: UserId, entity_id: EntityId = None, namespace: Namespace = "global",
                    budget_chars: Annotated[int | None, Field(ge=100, le=50_000, description=(
                        "At most this many characters of summary and items in `static` and `recent`, "
                        "100-50,000; omit for every item."))] = None) -> dict[str, Any]:
        """What reflection has learnt about an entity (or, without entity_id, about the user): a summary, then
        preferences, behaviors and facts, each with a confidence and the memory ids it rests on; `static` (long
        held) and `recent` (first said lately) hold the strongest items, within budget_chars when given."""
        profile = self.client.profile(user_id=user_id, entity_id=entity_id, namespace=namespace,
                                      budget_chars=budget_chars)
        if profile is None:
            return {"profile": None, "note": "no profile yet: reflection writes one once there is enough to learn "
                                             "from (see reflect)"}
        return dump(profile)

    def list_memories(self, user_id: OptionalUserId = None, entity_id: EntityFilter = None,
                      namespace: NamespaceFilter = None, memory_type: MemoryType | None = None,
                      state: State | None = None,
                      limit: Annotated[int, Field(ge=1, le=100, description="How many, 1-100.")] = 20,
                      ) -> dict[str, Any]:
        """List memories, newest first, with their ids, text, type, state and dates."""
        memories = self.client.list(user_id=user_id, entity_id=entity_id, namespace=namespace,
                                    memory_type=memory_type, state=state, page_size=limit)
        return {"memories": [brief(m) for m in islice(memories, limit)]}

    def get_memory(self, memory_id: MemoryId) -> dict[str, Any]:
        """One memory in full: text, type, state, entities, tags, importance, confidence, metadata, dates, and for a
        semantic memory the memories it was built from (`sources`)."""
        return dump(self.mine(self.client.get(memory_id)))

    def update_memory(self, memory_id: MemoryId, content: Text) -> dict[str, Any]:
        """Correct a memory's text (e.g. when the user says it is wrong). It is re-embedded, and whatever was
        built from the old text is unwound. Answers the corrected memory."""
        self.check_owner(memory_id)
        return brief(self.client.update(memory_id, content))

    def delete_memory(self, memory_id: MemoryId) -> dict[str, Any]:
        """Erase one memory and everything built from it (semantic memories, profile items). Cannot be undone.
        Answers what was erased."""
        self.check_owner(memory_id)
        return dump(self.client.delete(memory_id))

    def forget(self, user_id: OptionalUserId = None, entity_id: EntityFilter = None,
               everything: Annotated[bool, Field(description=(
                   "Must be true to forget every memory of the user (no entity_id)."))] = False) -> dict[str, Any]:
        """Forget an entity (entity_id): every memory about it, what was derived from it, its profile. Without
        entity_id, forgets the user entirely, only when everything is true. Cannot be undone."""
        if entity_id is None and not (user_id and everything):
            raise ToolError("give entity_id to forget an entity, or user_id with everything=true to forget the user"
                            if self.fixed_user is None else
                            "give entity_id to forget an entity, or everything=true to forget every memory")
        return dump(self.client.forget(user_id=user_id, entity_id=entity_id))

    def end_session(self, session_id: Annotated[str, Field(min_length=1, max_length=200, description=(
                        "The session (conversation) that ended."))],
                    user_id: UserId) -> dict[str, Any]:
        """Tell zeromem a conversation is over: it queues one consolidation pass for the user (merging similar
        memories, then reflecting the entities that became eligible). Ending a session twice does nothing."""
        return dump(self.client.end_session(session_id, user_id=user_id))

    def reflect(self, entity_id: EntityId = None, user_id: OptionalUserId = None, namespace: Namespace = "global",
                force: Annotated[bool, Field(description="Also reflect the current session.")] = False,
                ) -> dict[str, Any]:
        """Reflect now on an entity (or, without entity_id, on the user's own memories): derive insights and update
        the profile. Answers the insights, or a run_id to follow with get_run when it takes longer."""
        if entity_id is None and user_id is None:
            raise ToolError("give entity_id (an entity) or user_id (the user's own memories)")
        return dump(self.client.reflect(entity_id=entity_id, user_id=user_id, namespace=namespace, force=force))

    def get_run(self, run_id: RunId) -> dict[str, Any]:
        """A consolidation run (clustering, reflection, lifecycle): status, progress, LLM usage, error, and its
        result once finished, with the retrieval safety net's canary figures."""
        run = self.client.run(run_id)
        if self.fixed_user is not None and run.user_id != self.fixed_user:
            raise ToolError("no such run [404 not_found]")
        return dump(run)

    def why(self, memory_id: MemoryId) -> dict[str, Any]:
        """Where a memory came from and what happened to it: the memories it was merged from (sources), what it
        superseded or was superseded by, the ledger of changes, and the consolidation runs involved with their
        canary figures (retrieval recall before and after the run)."""
        history = self.client.history(memory_id).model_dump(mode="json")
        memory = self.mine(Memory.model_validate(history["memory"]) if history.get("memory")
                           else self.client.get(memory_id))
        return {**history, "memory": brief(memory)}


# --- who the caller is (HTTP) -------------------------------------------------------------------------------------

class CallerKeys:
    """The HTTP transport's `TokenVerifier` (the SDK's hook for a resource server): a bearer token is accepted when
    zeromem accepts it as an API key (one cheap authenticated read), remembered for `ttl` seconds. A refused key, or
    a zeromem that does not answer, is not remembered and answers 401."""

    def __init__(self, base_url: str, *, ttl: float = KEY_CHECK_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url
        self.ttl = ttl
        self.clock = clock
        self._accepted: dict[str, tuple[float, AccessToken]] = {}
        self._http: httpx.AsyncClient | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        token = token.strip()
        if not token:  # never an empty key: the client would fall back to ZEROMEM_API_KEY
            return None
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = self.clock()
        cached = self._accepted.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        if not await self._zeromem_accepts(token):
            return None
        # client_id tells callers apart (the SDK binds each MCP session to the credential that opened it).
        access = AccessToken(token=token, client_id=f"zeromem-key-{digest[:16]}", scopes=[])
        self._accepted = {d: entry for d, entry in self._accepted.items() if entry[0] > now}
        self._accepted[digest] = (now + self.ttl, access)
        return access

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _zeromem_accepts(self, token: str) -> bool:
        if self._http is None:
            self._http = httpx.AsyncClient()
        client = AsyncZeromem(api_key=token, base_url=self.base_url, max_retries=0, http_client=self._http)
        try:
            async for _ in client.runs(page_size=1):
                break
        except AuthenticationError:
            return False
        except ZeromemError as exc:
            logger.warning("could not check a caller's key with zeromem (%s): answering 401", exc)
            return False
        return True


def caller_client(base_url: str, http: httpx.Client) -> Zeromem:
    """A client with the key of the HTTP request under way (checked by CallerKeys before any tool runs)."""
    access = get_access_token()
    if access is None or not access.token:
        raise ToolError("no zeromem API key with this request [401 unauthorized]")
    return Zeromem(api_key=access.token, base_url=base_url, http_client=http)


# --- the server ---------------------------------------------------------------------------------------------------

def build_server(connect: Callable[[], Zeromem], *, user_id: str | None = None,
                 caller_keys: CallerKeys | None = None) -> MCPServer:
    """The MCP server with every tool, each call using `connect()`'s client; with `user_id`, scoped to that user
    and without user arguments; with `caller_keys`, HTTP requests need a key it accepts."""
    auth = None
    if caller_keys is not None:  # zeromem issues the keys; no OAuth metadata is served (resource_server_url None)
        auth = AuthSettings(issuer_url=AnyHttpUrl(caller_keys.base_url), resource_server_url=None)
    server = MCPServer("zeromem", instructions=INSTRUCTIONS, token_verifier=caller_keys, auth=auth)
    tools = Tools(connect, fixed_user=user_id)
    for tool in tools.all():
        fn = without_user(tool, user_id) if user_id is not None else tool
        server.add_tool(as_tool_errors(fn))
    return server


def http_server(*, user_id: str | None) -> MCPServer:
    """Over HTTP every call acts as its caller's key; ZEROMEM_API_KEY is not read."""
    base_url = os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    http = httpx.Client()
    return build_server(lambda: caller_client(base_url, http), user_id=user_id, caller_keys=CallerKeys(base_url))


def stdio_server(parser: argparse.ArgumentParser, *, user_id: str | None) -> MCPServer:
    """Over stdio every call acts as ZEROMEM_API_KEY: the agent that launched the server is its only caller."""
    try:
        client = Zeromem()
    except ZeromemError as exc:
        parser.error(exc.message)
    return build_server(lambda: client, user_id=user_id)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="zeromem-mcp", description=(
        "zeromem's memory tools over MCP. Reads ZEROMEM_URL, (optional) ZEROMEM_USER_ID and, for stdio only, "
        "ZEROMEM_API_KEY; over HTTP each caller sends its own key as 'Authorization: Bearer <key>'."))
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT (path /mcp) "
                                                                 "instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on with --http "
                                                            "(default 127.0.0.1)")
    args = parser.parse_args(argv)
    user_id = os.environ.get("ZEROMEM_USER_ID") or None
    if args.http is None:
        stdio_server(parser, user_id=user_id).run()
    else:
        http_server(user_id=user_id).run("streamable-http", host=args.host, port=args.http)


if __name__ == "__main__":
    main()
