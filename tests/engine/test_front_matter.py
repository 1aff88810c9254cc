"""Front matter as skills, agents, instructions and prompts carry it: read strictly, an error
naming its line where it is not what these files carry."""

from __future__ import annotations

import pytest

from hosts.engine.sessions.front_matter import FrontMatterError, parse, split


def test_a_file_without_front_matter_has_none():
    assert parse("# Title\n\nkey: not a header\n") == {}
    assert split("body") == (None, "body")


def test_plain_quoted_flag_and_list_values_are_read():
    text = (
        "---\n"
        "name: review\n"
        "description: 'It''s careful' # a comment\n"
        'hint: "<file> \\"x\\""\n'
        "disable-model-invocation: true\n"
        "user-invocable: False\n"
        "tools: [Read, 'Grep', \"Bash(git:*)\"]\n"
        "# a comment line\n"
        "empty: []\n"
        "---\n"
        "The body.\n"
    )
    assert parse(text) == {
        "name": "review",
        "description": "It's careful",
        "hint": '<file> "x"',
        "disable-model-invocation": True,
        "user-invocable": False,
        "tools": ["Read", "Grep", "Bash(git:*)"],
        "empty": [],
    }
    assert split(text)[1] == "The body.\n"


def test_lists_and_blocks_below_a_key_are_read():
    text = (
        "---\n"
        "tools:\n"
        "  - Read\n"
        "  - 'Edit'\n"
        "description: >\n"
        "  Folded into\n"
        "  one line.\n"
        "notes: |\n"
        "  kept\n"
        "  as lines\n"
        "globs:\n"
        "- '**/*.py'\n"
        "- docs/**\n"
        "---\n"
    )
    assert parse(text) == {
        "tools": ["Read", "Edit"],
        "description": "Folded into one line.",
        "notes": "kept\nas lines",
        "globs": ["**/*.py", "docs/**"],
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("---\nname: x\n", "never closed"),
        ("---\nname: x\njust words\n---\n", "line 3"),
        ("---\nname: x\nname: y\n---\n", "name is given twice"),
        ("---\ntools: [a, b\n---\n", "not closed with ]"),
        ("---\ndescription: 'open\n---\n", "quoted value is not closed"),
        ("---\ndescription: 'a' and 'b'\n---\n", "quoted value is not closed"),
        ("---\nmeta: {a: 1}\n---\n", "is not read here"),
        ("---\ntools:\n  a: 1\n---\n", "not `- item` lines"),
    ],
)
def test_what_these_files_do_not_carry_is_an_error_naming_where(text, said):
    with pytest.raises(FrontMatterError) as error:
        parse(text)
    assert said in str(error.value)
