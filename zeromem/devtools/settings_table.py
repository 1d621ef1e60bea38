"""docs/configuration.md, generated: the environment settings read by zeromem/settings.py (each with the comment
above it) and the policy's fields (zeromem/core/domain/policy.py). `manage.py settings_table` writes it; a test
checks that the committed file is what this module generates."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from zeromem.core.domain.policy import LEGACY_KEYS, SECTIONS, PolicyField, policy_fields

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "zeromem" / "settings.py"
CONFIGURATION = ROOT / "docs" / "configuration.md"
READERS = {"env_str", "env_int", "env_float", "env_bool", "env_choice"}
FIRST_SECTION = "Django, database and broker"


@dataclass(frozen=True)
class EnvSetting:
    """One variable the settings module reads: its default and bounds as written there, and the comment above."""

    name: str
    section: str
    default: str
    bounds: str
    description: str


def env_settings(source: str) -> list[EnvSetting]:
    """Every variable read through the env_* helpers (or os.environ.get for our own names), in file order, once."""
    lines = source.splitlines()
    found: dict[str, EnvSetting] = {}
    for statement in ast.parse(source).body:
        for call in (node for node in ast.walk(statement) if isinstance(node, ast.Call)):
            name = _variable(call)
            if name and name not in found:
                found[name] = EnvSetting(name, _section(lines, statement.lineno), _default(source, call),
                                         _bounds(source, call), _comment(lines, call.lineno, statement.lineno))
    return list(found.values())


def _variable(call: ast.Call) -> str | None:
    func = call.func
    reader = func.id if isinstance(func, ast.Name) else ast.unparse(func)
    first = call.args[0] if call.args else None
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    if reader in READERS or (reader == "os.environ.get" and first.value.startswith("ZEROMEM")):
        return first.value
    return None


def _default(source: str, call: ast.Call) -> str:
    if len(call.args) < 2:
        return ""
    text = re.sub(r"\(\s+", "(", " ".join((ast.get_source_segment(source, call.args[1]) or "").split()))
    if text.startswith("_embedded."):
        return "the embedded service"
    return '""' if text in ('""', "''") else text


def _bounds(source: str, call: ast.Call) -> str:
    given = {k.arg: ast.get_source_segment(source, k.value) for k in call.keywords}
    if "minimum" in given:
        return f"{given['minimum']} – {given['maximum']}"
    choices = call.args[2] if len(call.args) > 2 else None
    if isinstance(choices, ast.Set):
        return "one of " + ", ".join(sorted(str(getattr(c, "value", "")) for c in choices.elts))
    return ""


def _comment(lines: list[str], line: int, statement_line: int) -> str:
    """The comment lines right above the call, else above its statement (a header line never counts)."""
    for start in (line, statement_line):
        block: list[str] = []
        number = start - 2
        while number >= 0 and lines[number].lstrip().startswith("#") and "# ---" not in lines[number]:
            block.insert(0, lines[number].lstrip()[1:].strip())
            number -= 1
        if block:
            return " ".join(block)
    return ""


def _section(lines: list[str], line: int) -> str:
    for text in reversed(lines[:line]):
        header = re.match(r"# --- (.+?)(?: \(.*)? -+$", text)
        if header:
            return header.group(1).strip()
    return FIRST_SECTION


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _environment_tables(settings: list[EnvSetting]) -> list[str]:
    out: list[str] = []
    for section in dict.fromkeys(s.section for s in settings):
        out += [f"### {section[0].upper()}{section[1:]}", "", "| Variable | Default | Accepts | What it does |",
                "|---|---|---|---|"]
        out += [f"| `{s.name}` | {_code(s.default)} | {_cell(s.bounds)} | {_cell(s.description)} |"
                for s in settings if s.section == section]
        out.append("")
    return out


def _code(text: str) -> str:
    return f"`{_cell(text)}`" if text and text != "the embedded service" else _cell(text)


def _policy_tables(fields: list[PolicyField]) -> list[str]:
    out: list[str] = []
    for section, model in SECTIONS.items():
        out += [f"### `{section}`", "", _cell((model.__doc__ or "").strip()), "",
                "| Field | Type | Default | Accepts | What it does | Was |", "|---|---|---|---|---|---|"]
        for field in (f for f in fields if f.path.startswith(section + ".")):
            bounds = f"{field.minimum} – {field.maximum}" if field.minimum is not None else ""
            was = f"`{field.moved_from}`" if field.moved_from else "a constant in code"
            out.append(f"| `{field.path.split('.')[1]}` | {field.type} | `{field.default!r}` | {bounds} | "
                       f"{_cell(field.description)} | {was} |")
        out.append("")
    return out


INTRODUCTION = """\
<!-- Generated by `manage.py settings_table` from zeromem/settings.py and zeromem/core/domain/policy.py:
     edit those, then run the command. A test fails while this file differs from what it generates. -->

# Configuration

zeromem is configured in two places:

- **The environment** holds what a deployment decides: URLs, keys, limits, schedules, the log level, model names,
  time limits and leases. It is read once at start-up by `zeromem/settings.py`; a bad value stops start-up with a
  message that names the variable.
- **The policy** holds how the algorithms are calibrated: cluster floors, merge lengths, reflection sizes, search
  weights, lifecycle thresholds and the retrieval safety net. Its defaults live in code; each tenant may override
  any field. Every run reads its tenant's policy once as it starts and records it: the run's page in the admin
  shows the policy it worked under, what differs from the defaults in bold.

## The policy

A tenant's overrides are a JSON object in `Tenant.overrides` (admin → Tenants), by section:

```json
{"clustering": {"cosine_floor": 0.6, "recency_window_hours": 24}, "canaries": {"enabled": false}}
```

What is not named keeps its default. The admin refuses overrides that do not fit: an unknown section or field, a
value of the wrong type (`"0.6"` for a number, `1` for `true`) or out of bounds; the tenant's page shows the policy
in effect. Keys set before the policy had sections are still read, each as its field: {legacy}.

Most fields replaced an environment variable (the **Was** column). Start-up refuses to run while one of those is
still set, and names the field it became: a value there would otherwise be silently ignored.

"""


def configuration_markdown() -> str:
    """The whole of docs/configuration.md."""
    legacy = ", ".join(f"`{key}` (`{section}.{key}`)" for key, section in LEGACY_KEYS.items())
    settings = env_settings(SETTINGS.read_text())
    lines = [INTRODUCTION.replace("{legacy}", legacy).rstrip("\n"), "", *_policy_tables(list(policy_fields())),
             "## The environment", "",
             f"{len(settings)} variables. Without `DATABASE_URL` and `REDIS_URL`, `manage.py` starts an embedded "
             "PostgreSQL and Valkey under `var/` for local use.", "", *_environment_tables(settings)]
    return "\n".join(lines).rstrip("\n") + "\n"
