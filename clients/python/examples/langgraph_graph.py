"""A tiny LangGraph graph whose long-term memory is zeromem, through `ZeromemStore` (no LLM needed).

Each turn runs two nodes: `recall` searches the user's memories for what the message is about, `remember` stores
the message (a note the user wants kept) in the store. The namespace `(user_id, "assistant")` puts every memory in
zeromem under that user, about the entity "assistant" (see `zeromem_client.langgraph` for the mapping).

    pip install "zeromem-client[langgraph]"
    ZEROMEM_URL=http://127.0.0.1:8000 ZEROMEM_API_KEY=... python langgraph_graph.py
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from zeromem_client import Zeromem
from zeromem_client.langgraph import ZeromemStore


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    message: str
    recalled: list[str]


def namespace(runtime: Runtime[Context]) -> tuple[str, ...]:
    return (runtime.context.user_id, "assistant")


def recall(state: State, runtime: Runtime[Context]) -> State:
    assert runtime.store is not None
    hits = runtime.store.search(namespace(runtime), query=state["message"], limit=3)
    return {"recalled": [hit.value["text"] for hit in hits]}


def remember(state: State, runtime: Runtime[Context]) -> State:
    assert runtime.store is not None
    runtime.store.put(namespace(runtime), uuid.uuid4().hex, {"text": state["message"], "source": "chat"})
    return {}


def build(store: ZeromemStore):  # type: ignore[no-untyped-def]
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("recall", recall)
    graph.add_node("remember", remember)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "remember")
    graph.add_edge("remember", END)
    return graph.compile(store=store)


def main() -> None:
    with Zeromem() as client:  # ZEROMEM_URL, ZEROMEM_API_KEY
        app = build(ZeromemStore(client))
        context = Context(user_id="demo-user")
        for message in ("My favourite editor is Helix, with the default keymap.",
                        "I deploy the billing service every Tuesday morning.",
                        "Which editor do I use?"):
            state = app.invoke({"message": message}, context=context)
            print(f"remembered: {message}")
            print(f"recalled:   {state['recalled']}")


if __name__ == "__main__":
    main()
