"""`GET /healthz` needs no key and says whether the database and the broker answer."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_it_answers_200_when_the_database_and_the_broker_answer():
    response = Client().get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": True, "broker": True}


@pytest.mark.django_db
def test_it_answers_503_naming_the_broker_when_the_broker_is_down(monkeypatch):
    class DownBroker:
        def ping(self) -> None:
            raise ConnectionError("broker down")

    monkeypatch.setattr("zeromem.api.views.redis_client", lambda: DownBroker())

    response = Client().get("/healthz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": True, "broker": False}
