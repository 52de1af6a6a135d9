"""PNG figures, one home: matplotlib on the Agg backend and an atomic, byte-stable PNG write.

Used by the training curve, the evaluation plots and the report: the same data give the same PNG
bytes (no Software/date metadata), and a killed job never leaves half a PNG.
"""

from __future__ import annotations

from pathlib import Path

from hardneg.shards.io import atomic_path


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, path: str | Path, dpi: int) -> Path:
    """Write ``fig`` to ``path`` as PNG atomically without software metadata, then close it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    pyplot().close(fig)
    return Path(path)
