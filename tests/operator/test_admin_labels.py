"""The admin index reads as English and its operator links as words."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_the_index_names_models_in_proper_plurals(admin_client):
    page = admin_client.get("/admin/").content.decode()

    assert ">Memories<" in page and ">Canaries<" in page
    assert "Memorys" not in page and "Canarys" not in page


@pytest.mark.django_db
def test_the_stock_admin_pages_fold_below_the_operator_home(admin_client):
    page = admin_client.get("/admin/").content.decode()

    assert page.index("Runs of the last 24 h") < page.index('<details class="all-pages">') < page.index(">Memories<")
