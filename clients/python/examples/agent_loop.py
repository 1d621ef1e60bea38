"""An agent loop on zeromem: before answering, inject what zeromem remembers about the user (`context`); after
answering, remember the turn (`add`, the chat messages with their roles); when the conversation ends, say so
(`end_session`) so consolidation folds it into long-term memory.

Run it against a server: ZEROMEM_URL=http://127.0.0.1:8000 ZEROMEM_API_KEY=... python agent_loop.py
`reply()` stands in for your LLM call.
"""

from __future__ import annotations

import uuid

from zeromem_client import Zeromem

SYSTEM = "You are a helpful assistant. What you remember about the user:\n{memory}"


def reply(system_prompt: str, user_message: str) -> str:
    """Your LLM goes here (system_prompt + user_message in, text out). This one only shows what it was given."""
    remembered = system_prompt.split("\n", 1)[1].strip() or "nothing yet"
    return f"(answering {user_message!r} knowing: {remembered})"


def chat(client: Zeromem, *, user_id: str, session_id: str, messages: list[str]) -> None:
    for user_message in messages:
        memory = client.context(user_message, user_id=user_id, budget_chars=1000)
        answer = reply(SYSTEM.format(memory=memory.context), user_message)
        print(f"user: {user_message}\ncontext: {memory.context or '(empty)'}\nassistant: {answer}\n")
        client.add([{"role": "user", "content": user_message}, {"role": "assistant", "content": answer}],
                   user_id=user_id, session_id=session_id)
    ended = client.end_session(session_id, user_id=user_id)
    print(f"session ended: consolidation queued={ended.queued}, runs={ended.run_ids}")


def main() -> None:
    user_id = f"demo-{uuid.uuid4().hex[:8]}"
    with Zeromem() as client:  # ZEROMEM_URL and ZEROMEM_API_KEY from the environment
        print("--- session 1 ---")
        chat(client, user_id=user_id, session_id="session-1",
             messages=["Hi! I'm allergic to peanuts, please keep that in mind.", "I also love hiking in the Alps."])
        print("--- session 2 ---")
        chat(client, user_id=user_id, session_id="session-2",
             messages=["Can you suggest a snack for my hike, given my peanut allergy?"])


if __name__ == "__main__":
    main()
