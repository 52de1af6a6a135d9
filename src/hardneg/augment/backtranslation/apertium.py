"""Apertium (Debian's rule-based translator) as a back-translation backend.

One ``apertium [-u] MODE`` subprocess per batch of lines (Apertium's txt format maps one input
line to one output line). Every call has a timeout, so a hung translator cannot hang the shard;
a call that dies, times out or returns the wrong number of lines is retried, then split in halves
until the failing line(s) are isolated: those get a recorded error, all others a translation.

Unknown-word marks: Apertium prefixes words it cannot translate with ``*`` (unknown), ``#``
(generation error) or ``@`` (transfer error). By default we run with ``-u``, which drops the marks
and passes the unknown word through verbatim: the marks are not text, would count as word
differences in MER, and would leak into training sentences (``mark_unknown: true`` keeps them).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

Result = tuple[str | None, str | None]  # (translation, error)
REAP_TIMEOUT_S = 5  # waiting for a killed call's process group to exit
LIST_MODES_TIMEOUT_S = 30  # `apertium -l` (lists the installed modes; no translation)


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and every process it started, then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.communicate(timeout=REAP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass


@dataclass
class ApertiumTranslator:
    """Translate lines with ``apertium MODE``; ``translate`` never raises for a bad line."""

    batch_lines: int = 500
    timeout_s: float = 300.0  # backtranslation.apertium.timeout_s (schema default)
    retries: int = 1
    mark_unknown: bool = False
    binary: str = "apertium"

    def __post_init__(self) -> None:
        path = shutil.which(self.binary)
        if path is None:
            raise ValueError(
                f"backtranslation.apertium.binary: '{self.binary}' not found on PATH "
                f"(Debian: apt-get install apertium apertium-eng-spa apertium-eng-cat)"
            )
        self.binary = path
        self._modes: set[str] | None = None

    def available_modes(self) -> set[str]:
        if self._modes is None:
            try:
                out = subprocess.run(
                    [self.binary, "-l"], capture_output=True, text=True, timeout=LIST_MODES_TIMEOUT_S, check=False
                )
                self._modes = {line.strip() for line in out.stdout.splitlines() if line.strip()}
            except (OSError, subprocess.SubprocessError):
                self._modes = set()
        return self._modes

    def check_mode(self, mode: str) -> None:
        modes = self.available_modes()
        if modes and mode not in modes:
            raise ValueError(
                f"backtranslation.pivots: Apertium mode '{mode}' is not installed "
                f"(installed: {', '.join(sorted(modes))}; e.g. apt-get install apertium-eng-spa)"
            )

    def _run(self, lines: Sequence[str], mode: str) -> list[str]:
        """One subprocess call; raises RuntimeError on any failure."""
        cmd = [self.binary] + ([] if self.mark_unknown else ["-u"]) + [mode]
        payload = "".join(line + "\n" for line in lines)
        try:
            # Own process group: apertium is a shell pipeline (lt-proc, apertium-transfer, ...);
            # on timeout the whole group is killed, or a surviving child would hold the pipes open.
            proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", errors="replace", start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise RuntimeError(f"apertium {mode}: cannot start: {exc}") from None
        try:
            stdout, stderr = proc.communicate(payload, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise RuntimeError(f"apertium {mode}: timed out after {self.timeout_s:g}s") from None
        except BaseException:
            _kill_group(proc)
            raise
        if proc.returncode != 0:
            err = (stderr or "").strip().splitlines()
            raise RuntimeError(
                f"apertium {mode}: exit code {proc.returncode}"
                + (f": {err[-1][:200]}" if err else "")
            )
        out = stdout.split("\n")
        if out and out[-1] == "":
            out.pop()
        if len(out) != len(lines):
            raise RuntimeError(
                f"apertium {mode}: {len(out)} output lines for {len(lines)} input lines"
            )
        return [o.strip() for o in out]

    def _translate_batch(self, lines: list[str], mode: str) -> list[Result]:
        last = ""
        for attempt in range(self.retries + 1):
            try:
                return [(t, None) for t in self._run(lines, mode)]
            except RuntimeError as exc:
                last = str(exc)
                log.warning(
                    "%s (attempt %d/%d, %d lines)", last, attempt + 1, self.retries + 1, len(lines)
                )
        if len(lines) == 1:
            return [(None, last)]
        mid = len(lines) // 2  # isolate the failing line(s); the rest still get translated
        return self._translate_batch(lines[:mid], mode) + self._translate_batch(lines[mid:], mode)

    def translate(self, texts: Sequence[str], mode: str, progress=None) -> list[Result]:
        """Translate ``texts`` (order kept) with Apertium mode ``mode`` (e.g. "eng-spa")."""
        out: list[Result] = []
        for start in range(0, len(texts), self.batch_lines):
            # A newline inside a text would shift every later line: translate it as a space.
            batch = [" ".join(t.splitlines()) for t in texts[start : start + self.batch_lines]]
            out.extend(self._translate_batch(batch, mode))
            if progress is not None:
                progress.update(len(batch))
        return out
