"""The four steps and the rows' own checks, over plain rows (softov/ahpd docs/POLICY.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from usage.decide import Ask, PolicyError, decide, glob_matches, parse_row, pay_order, row_json

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def ask(model: str | None = None, person: str = "user:max", team: str = "", project: str = ""):
    values = {"agent": "claude"}
    if model:
        values["model"] = model
    return Ask(person, team, project, values)


def test_a_glob_is_a_run_of_anything_and_the_value_is_matched_whole():
    assert glob_matches("deepseek/*", "deepseek/deepseek-v4.1-flash")
    assert not glob_matches("deepseek/*", "anthropic/fable-5")
    assert glob_matches("*", "")
    assert not glob_matches("a.c", "abc")  # no other character is special
    assert not glob_matches("claude", "claude-2")


def test_no_candidate_refuses_naming_the_kind_and_what_was_asked():
    assert decide([], ask("m/x"), NOW).refusal == "no policy allows agent claude with model m/x"


def test_a_deny_wins_over_any_allow_and_names_its_row():
    rows = [
        parse_row("all-in", {"scope": "all"}),
        parse_row("A5", {"scope": "user:max", "effect": "deny", "match": {"model": ["m/*"]}}),
    ]
    assert decide(rows, ask("m/x"), NOW).refusal == "A5 refuses agent claude with model m/x"
    # A deny binds only when everything it names was asked: a session names no model.
    assert decide(rows, ask(), NOW).refusal is None


def test_an_allow_skips_a_type_the_request_did_not_name():
    rows = [parse_row("models", {"match": {"model": ["m/*"], "agent": ["claude"]}})]
    assert decide(rows, ask(), NOW).refusal is None
    assert decide(rows, ask("other/y"), NOW).refusal is not None


def test_scopes_hold_their_people_teams_and_projects():
    team = parse_row("t", {"scope": "team:alpha"})
    project = parse_row("p", {"scope": "project:alpha:web"})
    assert decide([team], ask(team="alpha"), NOW).refusal is None
    assert decide([team], ask(), NOW).refusal is not None  # somebody in no team
    assert decide([project], ask(team="alpha", project="web"), NOW).refusal is None
    assert decide([project], ask(team="beta", project="web"), NOW).refusal is not None


def test_a_row_is_a_candidate_only_while_it_is_active():
    row = parse_row("window", {"from": "2026-12-01", "until": "2026-12-02"})
    assert decide([row], ask(), NOW).refusal is not None
    assert decide([row], ask(), datetime(2026, 12, 2, 23, 0, tzinfo=UTC)).refusal is None


def test_allowing_rows_are_grouped_by_scope_in_pay_order():
    regular = parse_row("regular", {"scope": "user:max"})
    extra = parse_row("extra", {"scope": "user:max", "until": "2026-12-31"})
    team = parse_row("team", {"scope": "all"})
    groups = decide([regular, extra, team], ask(), NOW).payers
    assert [[r.id for r in g] for g in groups] == [["extra", "regular"], ["team"]]
    assert [r.id for r in pay_order([regular, extra], "regular")] == ["regular", "extra"]
    assert [r.id for r in pay_order([regular, extra], "extra")] == ["extra", "regular"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"kind": "robot"}, "kind must be one of"),
        ({"effect": "maybe"}, "effect must be allow or deny"),
        ({"scope": "planet:x"}, "scope must be all"),
        ({"match": {"proxy": ["x"]}}, "a agent row cannot match on 'proxy'"),
        ({"limits": [{"amount": 1, "measure": "turns", "period": "day"}]}, "pool must be shared"),
        (
            {"limits": [{"amount": 1, "measure": "sessions", "period": "day", "pool": "each"}]},
            "measure 'sessions' is not a measure of agent rows",
        ),
        ({"from": "2026-12-02", "until": "2026-12-01"}, "from must be before until"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_a_row_that_is_not_one_is_refused_by_name(body, said):
    with pytest.raises(PolicyError) as wrong:
        parse_row("R1", body)
    assert said in str(wrong.value) and "policy R1" in str(wrong.value)


def test_a_row_read_back_is_the_row_written():
    body = {
        "scope": "team:alpha",
        "kind": "agent",
        "effect": "allow",
        "match": {"agent": ["claude"]},
        "limits": [{"amount": 5, "measure": "usd", "period": "month", "pool": "shared"}],
        "until": "2026-12-31T00:00:00Z",
    }
    assert row_json(parse_row("R", body)) == {"id": "R", **body}
