"""Route a rule's Python logging (and warnings) to its Snakemake ``log:`` file."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path


def log_to(path: str | Path | None, level: int = logging.INFO) -> None:
    """Send logging to ``path`` (and stderr), replacing earlier handlers."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w"))
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)


def run_rule(func, log_path: str | Path | None, /, *args, **kwargs):
    """Run a rule's entry point: log to its file, turn user-facing errors into one clear line.

    Errors raised by the library already name the file, line or setting; a deep traceback would
    only bury that message, so it is logged at ERROR and the job exits with status 1. With
    ``HARDNEG_TRACEBACK=1`` in the environment the error propagates whole, for a bug report.
    """
    log_to(log_path)
    try:
        return func(*args, **kwargs)
    except (ValueError, FileNotFoundError, RuntimeError, OSError) as exc:
        logging.getLogger("hardneg").error("%s: %s", type(exc).__name__, exc)
        if os.environ.get("HARDNEG_TRACEBACK", "") not in ("", "0"):
            raise
        sys.exit(1)
