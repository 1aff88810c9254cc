"""Run the protocol's shared reducer cases against the Python reducers.

The case files are the protocol's own (``types/test-cases/reducers`` at
1.0.0), kept in the shared folder beside the repository rather than copied
in: ``reducers/`` (106) and ``reducers-more/`` (87 more of the same tag; the
folder's SOURCE.md says where each came from). Each is
``{description, reducer, initial, actions, expected}``: the actions are
applied in order and the result must equal ``expected``, where a key whose
value is null counts as absent.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hosts.protocol.reducers import reduce

NOW_MS = 9999


def _shared_dir() -> Path:
    # The repository sits beside a copy of `shared/`, locally and in CI; an
    # environment variable can point elsewhere.
    override = os.environ.get("AHP_SHARED_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[3] / "shared"


CASES_DIR = _shared_dir() / "ahp" / "cases" / "reducers"
MORE_CASES_DIR = _shared_dir() / "ahp" / "cases" / "reducers-more"
FIRST_CASE_FILES = sorted(CASES_DIR.glob("*.json"))
MORE_CASE_FILES = sorted(MORE_CASES_DIR.glob("*.json"))
CASE_FILES = FIRST_CASE_FILES + MORE_CASE_FILES


def drop_nulls(value: Any) -> Any:
    """Remove null-valued keys recursively: the cases treat null as absent."""
    if isinstance(value, dict):
        return {key: drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [drop_nulls(item) for item in value]
    return value


def test_the_shared_case_folder_holds_every_case() -> None:
    assert len(FIRST_CASE_FILES) == 106, f"expected 106 case files in {CASES_DIR}"
    assert len(MORE_CASE_FILES) == 87, f"expected 87 case files in {MORE_CASES_DIR}"


@pytest.mark.parametrize(
    "case_file", CASE_FILES, ids=[f"{path.parent.name}/{path.stem}" for path in CASE_FILES]
)
def test_reducer_case(case_file: Path) -> None:
    case = json.loads(case_file.read_text(encoding="utf-8"))
    initial = case["initial"]
    pristine = copy.deepcopy(initial)
    actions = case["actions"]
    pristine_actions = copy.deepcopy(actions)

    state = initial
    for action in actions:
        state = reduce(case["reducer"], state, action, now_ms=NOW_MS)

    assert drop_nulls(state) == drop_nulls(case["expected"]), case["description"]
    assert initial == pristine, "the reducer mutated the initial state"
    assert actions == pristine_actions, "the reducer mutated an action"
