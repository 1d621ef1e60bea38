"""The broker transport survives the broker going away while a worker holds an unacknowledged message.

A worker holds a message unacknowledged while its task runs (`acks_late`) or waits for its countdown. When the
broker goes away, Celery's consumer collects the connection (which forgets the broker's address) and then closes
it; closing the channel restores the unacknowledged messages, which needs a fresh connection pool, built from the
forgotten address. kombu 5.7 raises AttributeError there, which the consumer does not expect: the worker stops
("Unrecoverable error"). Our transport raises a connection error instead, which the consumer handles by
reconnecting; the messages come back through the visibility timeout."""

from __future__ import annotations

import pytest
from kombu import Exchange, Queue

from zeromem.celery import app
from zeromem.core import broker


@pytest.fixture
def held(db):
    """A connection holding one message unacknowledged, as a worker does while its task runs."""
    queue = Queue("broker-test", Exchange("broker-test"), routing_key="broker-test")
    connection = app.connection_for_read()
    channel = connection.default_channel
    queue(channel).declare()
    channel.client.delete("broker-test")
    connection.Producer().publish({"n": 1}, exchange=queue.exchange, routing_key="broker-test", declare=[queue])
    message = queue(channel).get(no_ack=False)
    assert message is not None
    yield connection
    app.connection_for_write().default_channel.client.delete("broker-test")


def test_celery_talks_to_the_broker_through_the_guarded_transport():
    assert app.connection_for_read().get_transport_cls() is broker.Transport


def test_a_connection_collected_while_it_holds_a_message_closes_without_crashing_the_worker(held):
    # What the consumer's `collect()` leaves when the broker is gone: closing the channel failed on the dead socket
    # (a connection error, ignored), and the transport forgot the connection it belonged to.
    held._do_close_transport()
    held.release()  # the consumer then closes the connection: the channel restores what it holds
