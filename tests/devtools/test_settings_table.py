"""docs/configuration.md is generated from zeromem/settings.py and the policy, and committed as generated."""

from __future__ import annotations

import re

from zeromem.core.domain.policy import policy_fields
from zeromem.devtools.settings_table import CONFIGURATION, SETTINGS, configuration_markdown, env_settings


def test_the_committed_configuration_page_is_what_the_command_generates():
    assert CONFIGURATION.read_text() == configuration_markdown(), "run `manage.py settings_table`"


def test_every_variable_the_settings_read_has_a_row_that_says_what_it_does():
    source = SETTINGS.read_text()
    read = set(re.findall(r"""(?:env_\w+|os\.environ\.get)\(\s*"(ZEROMEMORY_\w+)\"""", source))
    rows = {setting.name: setting for setting in env_settings(source)}
    assert read <= set(rows) and {"DATABASE_URL", "REDIS_URL"} <= set(rows)
    assert [name for name, setting in rows.items() if not setting.description] == []


def test_every_policy_field_has_a_row_with_its_default_and_the_variable_it_replaced():
    page = configuration_markdown()
    for field in policy_fields():
        name = field.path.split(".")[1]
        assert f"| `{name}` | {field.type} | `{field.default!r}` |" in page
        assert f"`{field.moved_from}` |" in page if field.moved_from else "| a constant in code |" in page
