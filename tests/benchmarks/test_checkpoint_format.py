"""benchmarks/checkpoint_format.py: vfm's checkpoint timed at scale beside schema-library prototypes
of the same layout (msgspec, pydantic), and what each refuses."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks import checkpoint_format

JOBS = 200


@pytest.fixture(scope="module")
def text() -> str:
    return checkpoint_format.build_policy(JOBS).checkpoint()


def test_the_policy_has_a_standing_plan_reported_epochs_and_completed_jobs(text):
    document = json.loads(text)
    assert document["plan"] is not None and document["plan"]["rows"]
    assert len(document["completed"]) == 3 and len(document["jobs"]) == JOBS - 3
    assert any(job["stages"] for job in document["jobs"])
    assert {job["gpus"] for job in document["jobs"]} == {1, 2, 4, 8}


def test_the_msgspec_prototype_decodes_the_real_checkpoint_and_names_the_path(text):
    msgspec = pytest.importorskip("msgspec")
    checkpoint = checkpoint_format.msgspec_types()
    decoded = msgspec.json.decode(text, type=checkpoint, strict=True)
    assert len(decoded.jobs) == JOBS - 3 and decoded.plan.rows
    assert json.loads(msgspec.json.encode(decoded)) == json.loads(text)
    document = json.loads(text)
    document["jobs"][3]["budget"] = "2.0"
    with pytest.raises(msgspec.ValidationError, match=r"at `\$\.jobs\[3\]\.budget`"):
        msgspec.json.decode(json.dumps(document), type=checkpoint, strict=True)


def test_the_pydantic_prototype_decodes_the_real_checkpoint(text):
    pytest.importorskip("pydantic")
    checkpoint = checkpoint_format.pydantic_types()
    decoded = checkpoint.model_validate_json(text)
    assert json.loads(decoded.model_dump_json()) == json.loads(text)


def test_vfm_refuses_every_damage_and_a_declaration_only_what_needs_no_other_field(text):
    found, _ = checkpoint_format.prototypes()
    answers = dict(checkpoint_format.refusals(text, found))
    assert len(answers) == len(checkpoint_format.CASES)
    assert all(answer["vfm"].startswith("refused: ") for answer in answers.values())
    # What depends on the configuration or on other fields, no declaration refuses.
    cross = ("gpus is 512", "stages count", "repeats jobs[2].id", "one row fewer", "config.seed changed")
    for prototype in found:
        for name, answer in answers.items():
            said = answer[prototype.name]
            if name.startswith("jobs[3].budget") or "unknown field" in name or name == "version is 1":
                assert said.startswith("refused: "), (prototype.name, name, said)
            if any(part in name for part in cross):
                assert said == "accepted", (prototype.name, name, said)


def test_the_report_is_written_with_times_refusals_and_lines(tmp_path, capsys):
    out = tmp_path / "checkpoint_format.txt"
    checkpoint_format.main(["--jobs", str(JOBS), "--repeats", "1", "--out", str(out)])
    report = out.read_text()
    assert report.startswith(f"# command: python -m benchmarks.checkpoint_format --jobs {JOBS}")
    for line in ("checkpoint()", "  of which json.dumps (one line)", "restore(text), fresh policy",
                 "  of which the parse (no repeated key)", f"refusals: a checkpoint of {JOBS} jobs",
                 "  of which in the helpers a declaration replaces", "vfm/planner/policy/checkpoint/read.py",
                 "  of checkpoint/read.py, the helpers a declaration replaces"):
        assert f"\n{line}" in report, line
    for library in ("msgspec", "pydantic"):
        assert (f"\n{library} " in report and f"\nestimate: restore with {library} " in report) or \
            f"\n{library}: not installed, its prototype skipped" in report
    assert report in capsys.readouterr().out


def test_a_missing_library_is_one_line_and_skipped(monkeypatch):
    monkeypatch.setitem(sys.modules, "msgspec", None)
    monkeypatch.setitem(sys.modules, "pydantic", None)
    found, skipped = checkpoint_format.prototypes()
    assert found == []
    assert skipped == ["msgspec: not installed, its prototype skipped (pip install msgspec)",
                       "pydantic: not installed, its prototype skipped (pip install pydantic)"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--jobs", "0"], "--jobs must be a whole number from 10 to 1000000, got 0"),
    (["--jobs", "many"], "--jobs must be a whole number from 10 to 1000000, got many"),
    (["--repeats", "0"], "--repeats must be a whole number from 1 to 100, got 0"),
])
def test_bad_arguments_are_one_line_before_any_work(argv, message, capsys, tmp_path):
    out = tmp_path / "new" / "checkpoint_format.txt"
    with pytest.raises(SystemExit) as stop:
        checkpoint_format.main([*argv, "--out", str(out)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err
    assert captured.out == "" and not out.parent.exists()


def test_an_out_file_that_is_a_folder_is_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as stop:
        checkpoint_format.main(["--out", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"({tmp_path} is a folder; name a file)" in err
