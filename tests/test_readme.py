"""The README's coverage table is the one the registries generate."""

from __future__ import annotations

from pathlib import Path

from hosts.engine.coverage import markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_coverage_table_is_generated_from_the_registries():
    assert markdown() in README.read_text(), (
        "README.md's coverage table is stale: paste `python manage.py coverage` over it"
    )


def test_the_readme_opens_with_the_two_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text
