"""The typed plan, configuration row and record: their JSON forms are the files between
stages, exactly as every committed capture holds them, and a file that is not one is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CAPTURES
from ncuflow.errors import NcuflowError
from ncuflow.plan import Plan, Record, read_records, records_json

PLANS = sorted(CAPTURES.glob("*/*/*/plan.json"))
RECORDS = sorted(CAPTURES.glob("*/*/*/measure.json"))


def test_every_captured_plan_and_record_reads_and_writes_back_byte_for_byte() -> None:
    """Plans and records of every age (before and after the L2 flush method, the gate, the
    device facts, grid_facts) keep their exact text, so their fingerprints hold."""
    assert len(PLANS) > 100 and len(RECORDS) > 100
    for path in PLANS:
        assert Plan.load(path).to_json() == path.read_text(), path
    for path in RECORDS:
        assert records_json(read_records(path)) == path.read_text(), path


def test_every_captured_record_has_the_fingerprint_of_its_own_plan() -> None:
    """What decides a measurement is hashed today as when it was captured: a resume or a
    replay under the same plan reuses exactly these records."""
    checked = 0
    for path in PLANS:
        plan = Plan.load(path)
        records = read_records(path.with_name("measure.json"))
        for row in plan.pending:
            assert records[row.config_id].fingerprint == plan.fingerprint(row), (path, row)
            checked += 1
    assert checked > 600


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": {"status": "ok", "tim', "not valid JSON"),
        ('{"a": {"status": "ok", "speed": 1}}', "a: unknown speed"),
        ('{"a": {"error": ""}}', "a: missing status"),
        ("[1, 2]", "expected a mapping of configuration ids to records"),
    ],
)
def test_a_measure_file_that_is_not_one_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "measure.json"
    path.write_text(text)
    with pytest.raises(NcuflowError, match=message) as caught:
        read_records(path)
    assert str(path) in str(caught.value)


def test_a_record_keeps_only_what_it_has() -> None:
    """A failed configuration's record has no times; its keys are sorted, as measure.json
    has always held them."""
    record = Record.failed("timeout", "no result", "abc")
    assert record.to_json() == {"error": "no result", "fingerprint": "abc", "rel_error": None,
                                "repeats": 0, "status": "timeout"}  # fmt: skip
    assert Record.from_json(json.loads(json.dumps(record.to_json()))) == record
