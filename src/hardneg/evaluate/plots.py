"""Report plots: Cont./Oppn. Spearman per dataset (OssCSE Fig. 5 / Table 6) and the cosine
distribution of hard pairs (gold >= 4, lexical overlap < 0.6; SAN paper §5.2, Figure 4)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import polars as pl

from hardneg.plotting import pyplot, save_png

HARD_MIN_SCORE = 4.0   # SAN §5.2: similarity score of at least 4
HARD_MAX_OVERLAP = 0.6  # ... and lexical overlap ratio below 0.6


def hard_pairs(predictions: pl.DataFrame) -> pl.DataFrame:
    """Pairs with gold >= 4 and lexical overlap < 0.6. The SAN paper does not define its overlap
    ratio; we use 1 - MER (word level, case-insensitive), the project's surface-similarity measure."""
    return predictions.filter((pl.col("score") >= HARD_MIN_SCORE) & ((1.0 - pl.col("mer")) < HARD_MAX_OVERLAP))


DPI = 110  # the evaluation plots' resolution (the report's own figures use 100)


def plot_cont_oppn(cont_oppn: Mapping, out: str | Path, title: str = "") -> Path:
    """Grouped bars: Spearman x100 on Cont. and Oppn. of every source + the weighted average."""
    plt = pyplot()
    groups = list(cont_oppn["groups"])
    names = groups + ["weighted avg"]
    cont = [cont_oppn["groups"][g]["cont"]["spearman"] for g in groups] + [cont_oppn["weighted_average"]["cont"]]
    oppn = [cont_oppn["groups"][g]["oppn"]["spearman"] for g in groups] + [cont_oppn["weighted_average"]["oppn"]]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(names)), 4))
    ax.bar(x - 0.2, [np.nan if v is None else v for v in cont], 0.4, label="Cont.")
    ax.bar(x + 0.2, [np.nan if v is None else v for v in oppn], 0.4, label="Oppn.")
    ax.set_xticks(x, names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("Spearman x100")
    ax.set_title(title or "Cont./Oppn. splits")
    ax.legend()
    fig.tight_layout()
    return save_png(fig, out, DPI)


def plot_hard_pairs(curves: Mapping[str, pl.DataFrame], out: str | Path, bins: int = 25) -> Path:
    """Histogram (as density lines) of cosine on the hard pairs of each named predictions frame."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    edges = np.linspace(0.0, 1.0, bins + 1)
    for label, preds in curves.items():
        hard = hard_pairs(preds)
        if hard.height == 0:
            continue
        hist, _ = np.histogram(hard["cosine"].to_numpy().clip(0, 1), bins=edges)
        ax.plot((edges[:-1] + edges[1:]) / 2, hist / hist.sum(), marker="o", ms=3, label=f"{label} (n={hard.height})")
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("fraction of hard pairs")
    ax.set_title("gold >= 4 and lexical overlap < 0.6")
    ax.legend()
    fig.tight_layout()
    return save_png(fig, out, DPI)
