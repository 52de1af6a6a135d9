"""A rule's user-facing error is one line on stderr; the traceback goes to its log file only."""

from __future__ import annotations

import logging

import pytest

from hardneg.runlog import run_rule


@pytest.fixture(autouse=True)
def _root_logging():
    """log_to replaces the root logger's handlers: put pytest's back and close the rule's."""
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    yield
    for h in root.handlers:
        if h not in saved:
            h.close()
    root.handlers[:] = saved
    root.setLevel(level)


def _bad(path, *, log_path=None):
    raise ValueError(f"{path}:3: field 'text': not a string")


def test_user_error_is_one_line_and_the_log_keeps_the_traceback(tmp_path, capsys):
    log = tmp_path / "logs" / "rule.log"
    with pytest.raises(SystemExit) as exit_:
        run_rule(_bad, log, "corpus.txt", log_path="passed through")  # the runner's own log_path too
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "ValueError: corpus.txt:3: field 'text': not a string" in err
    assert "Traceback" not in err
    text = log.read_text()
    assert "ValueError: corpus.txt:3: field 'text': not a string" in text
    assert "Traceback (most recent call last)" in text and "in _bad" in text


def test_a_bug_keeps_its_traceback(tmp_path):
    with pytest.raises(KeyError):
        run_rule(lambda: {}["missing"], tmp_path / "rule.log")
