"""Correlation metrics written out here (not scipy) so tests can cross-check them against scipy."""

from __future__ import annotations

import math

import numpy as np


def rankdata(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank (scipy's 'average' method)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    # Boundaries of runs of equal values.
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    avg = (starts + ends + 1) / 2.0  # mean of 1-based positions start+1 .. end
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation; NaN when either side is constant or has < 2 values."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"pearson: shapes differ {a.shape} vs {b.shape}")
    if len(a) < 2:
        return math.nan
    da, db = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / denom if denom > 0 else math.nan


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho = Pearson of average ranks (SentEval uses scipy.stats.spearmanr)."""
    return pearson(rankdata(a), rankdata(b))


def cosine_rows(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two [N, D] arrays, in float64."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    nu = np.linalg.norm(u, axis=1)
    nv = np.linalg.norm(v, axis=1)
    return (u * v).sum(1) / np.maximum(nu * nv, 1e-12)


def x100(value: float, ndigits: int | None = 2) -> float | None:
    """Correlation -> percentage points, rounded; None for NaN (JSON has no NaN)."""
    if value is None or math.isnan(value):
        return None
    out = 100.0 * value
    return round(out, ndigits) if ndigits is not None else out
