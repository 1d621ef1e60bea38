"""The documentation is a set of guides that builds into a site: `mkdocs build --strict` passes (no broken link,
no page missing from the nav, no nav entry without its page), the README stays short, the guides read as guides
(no dated entries, no "session N" stamps, no "earlier:" comparisons: history lives in git and CHANGELOG.md), and
the results page is exactly what `manage.py results render` makes of the recorded figures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, guide_files
from zeromem.core.domain.policy import policy_fields
from zeromem.devtools.results import PAGE, render

MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
LOG_MARKERS = {
    "a date": re.compile(rf"\b(?:19|20)\d\d-\d\d-\d\d\b|\b\d{{1,2}} {MONTH} (?:19|20)\d\d\b"
                         rf"|\b{MONTH} \d{{1,2}}, \d{{4}}"),
    "a session stamp": re.compile(r"\bsession \d+\b", re.I),
    "an earlier-figure comparison": re.compile(r"\bearlier:", re.I),
}
HISTORY = {ROOT / "CHANGELOG.md"}


def prose(text: str) -> str:
    """The text a reader reads as sentences: fenced blocks and inline code (examples, data) left out."""
    without_blocks = re.sub(r"^([ \t]*)```.*?^\1```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", without_blocks)


def test_the_site_builds_with_strict_checks(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                          check=False)

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "jobs" / "clustering" / "index.html").exists()


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


@pytest.mark.parametrize("path", [p for p in guide_files() if p not in HISTORY], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_guides_are_not_a_log(path: Path) -> None:
    text = prose(path.read_text())
    found = {what: marker.findall(text) for what, marker in LOG_MARKERS.items()}

    assert not any(found.values()), f"{path.relative_to(ROOT)}: {found}"


def test_the_log_check_catches_a_dated_figure() -> None:
    text = prose("Measured 2026-11-23 (session 23): 342.9/s; earlier: 262.8/s. `2025-03-01` in code is data.")

    assert [bool(marker.search(text)) for marker in LOG_MARKERS.values()] == [True, True, True]
    assert "2025-03-01" not in text


@pytest.mark.parametrize("name", ["README.md", "ARCHITECTURE.md", "CHANGELOG.md"])
def test_the_root_pages_link_to_files_that_exist(name: str) -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose((ROOT / name).read_text()))
    local = [target for target in targets if "://" not in target]

    assert [target for target in local if not (ROOT / target).exists()] == []


def test_every_setting_a_guide_names_exists() -> None:
    defined = (ROOT / "zeromem" / "settings.py").read_text()
    named = {name for path in guide_files() for name in re.findall(r"ZEROMEMORY_[A-Z0-9_]*[A-Z0-9]", path.read_text())}

    moved_to_the_policy = {field.moved_from for field in policy_fields()}  # configuration.md names what each replaced
    assert {name for name in named if f'"{name}"' not in defined and name not in moved_to_the_policy} == set()


def test_the_results_page_is_the_rendering_of_the_recorded_figures() -> None:
    assert PAGE.read_text() == render(), "run `manage.py results render` and commit docs/results.md"
