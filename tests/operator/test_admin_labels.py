"""The admin index reads as English and its operator links as words."""

from __future__ import annotations

import re

import pytest


@pytest.mark.django_db
def test_the_index_names_models_in_proper_plurals(admin_client):
    page = admin_client.get("/admin/").content.decode()

    assert ">Memories<" in page and ">Canaries<" in page
    assert "Memorys" not in page and "Canarys" not in page


@pytest.mark.django_db
def test_the_operator_links_keep_their_column_from_shrinking(admin_client):
    page = admin_client.get("/admin/").content.decode()

    operator = page[page.index("<caption>Operator</caption>"):]
    link_cells = re.findall(r'<th scope="row" style="([^"]*)"><a href="/admin/(?:dashboard|review)/"', operator)
    assert len(link_cells) == 2 and all("white-space:nowrap" in style for style in link_cells)
