"""The Redis broker transport (kombu's), with one guard it lacks.

When the broker goes away while a worker holds a message unacknowledged (a task running with `acks_late`, or
waiting for its countdown), Celery's consumer collects the connection, which makes the transport forget the
connection it belongs to, and then closes it. Closing the channel restores the messages it holds, which needs a
fresh connection pool, built from the forgotten connection's address: kombu 5.7 raises AttributeError there, which
the consumer does not expect, and the worker stops ("Unrecoverable error"). Here that is a connection error, which
the consumer ignores while it closes and then reconnects; the messages stay in the broker's unacknowledged set and
come back after the visibility timeout, as they would had the worker died."""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis
from redis import exceptions


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise exceptions.ConnectionError("the broker connection was closed")
        return super()._connparams(asynchronous)  # type: ignore[no-untyped-call]  # kombu is untyped


class Transport(kombu_redis.Transport):
    Channel = Channel
