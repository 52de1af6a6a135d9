"""A rule's user-facing error is one line, in its log and on stderr, with no traceback unless
HARDNEG_TRACEBACK=1 asks for one (a bug report)."""

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


def test_user_error_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HARDNEG_TRACEBACK", raising=False)
    log = tmp_path / "logs" / "rule.log"
    with pytest.raises(SystemExit) as exit_:
        run_rule(_bad, log, "corpus.txt", log_path="passed through")  # the runner's own log_path too
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "ValueError: corpus.txt:3: field 'text': not a string" in err and "Traceback" not in err
    text = log.read_text()
    assert "ValueError: corpus.txt:3: field 'text': not a string" in text and "Traceback" not in text


def test_hardneg_traceback_lets_the_error_through(tmp_path, monkeypatch):
    monkeypatch.setenv("HARDNEG_TRACEBACK", "1")
    with pytest.raises(ValueError, match="field 'text'"):
        run_rule(_bad, tmp_path / "rule.log", "corpus.txt")
    assert "field 'text'" in (tmp_path / "rule.log").read_text()  # logged as well


def test_a_bug_keeps_its_traceback(tmp_path):
    with pytest.raises(KeyError):
        run_rule(lambda: {}["missing"], tmp_path / "rule.log")
