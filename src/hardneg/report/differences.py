"""Is a method's gain over its base method real? The difference of STS averages with a confidence
interval, said in words.

- Two seeds or more on both sides: Welch's t-interval over seeds on the seed means of ``avg``
  (the spread is seed noise: training randomness).
- Otherwise (one seed): a paired bootstrap over the STS test pairs of one seed each. Pairs are
  resampled with replacement within each dataset, the same draws for both methods; each draw
  recomputes every dataset's Spearman (over all its pairs: SentEval's "all" figure for STS12-16,
  hardneg.evaluate.sts) and their mean, as ``avg`` is computed. The spread is test-set sampling
  noise only: seed noise is not measured with one seed, and the words say so.

The bootstrap's generator is seeded (``report.bootstrap.seed``), so the report is byte-stable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats as sps

# Each method's base method: the method its paper adds to, when that method is a preset here.
# SAN Table 3 (+SAN after SimCSE, SNCSE, RankCSE); HiCL Table 1 (+HiCL after SimCSE, SNCSE);
# OssCSE Table 4, HNCSE Table 1 and SynCSE Table 1 against unsupervised SimCSE; SNCSE and RankCSE
# extend SimCSE's InfoNCE (their §3). RLRD+SAN's base, RLRD, is no preset: it has no row.
BASE_METHOD: dict[str, str] = {
    "simcse_san": "simcse",
    "sncse_san": "sncse",
    "rankcse_san": "rankcse",
    "hicl_simcse": "simcse",
    "hicl_sncse": "sncse",
    "sncse": "simcse",
    "rankcse": "simcse",
    "osscse": "simcse",
    "hncse_pm": "simcse",
    "hncse_hnm": "simcse",
    "syncse": "simcse",
}

_KEYS = ("dataset", "subset", "pair_index")
_CHUNK = 100  # resamples per block: bounds memory at 100 x (largest dataset) floats per array


@dataclass(frozen=True)
class Interval:
    """``diff`` (method minus base) and its ``[low, high]`` interval at ``confidence``."""

    diff: float
    low: float
    high: float
    confidence: float
    kind: str  # "welch-t" or "paired-bootstrap"

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def words(self) -> str:
        """``"+0.40 [-0.20, +1.00], inside seed noise"`` (test-pair noise for the bootstrap)."""
        noise = "seed noise" if self.kind == "welch-t" else "test-pair noise (one seed: seed noise not measured)"
        where = "outside" if self.excludes_zero else "inside"
        return f"{self.diff:+.2f} [{self.low:+.2f}, {self.high:+.2f}], {where} {noise}"


def welch_interval(method: Sequence[float], base: Sequence[float], confidence: float = 0.95) -> Interval:
    """Welch's t-interval for mean(method) - mean(base) from per-seed scores (>= 2 each)."""
    a, b = np.asarray(method, dtype=np.float64), np.asarray(base, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        raise ValueError(f"welch_interval: needs >= 2 seeds on each side (got {a.size} and {b.size})")
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0.0:  # no spread on either side: the interval is the point
        return Interval(diff, diff, diff, confidence, "welch-t")
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))  # Welch-Satterthwaite
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * se
    return Interval(diff, diff - half, diff + half, confidence, "welch-t")


def _centred_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share their mean rank, as hardneg.evaluate.metrics) minus each row's mean."""
    r = sps.rankdata(x, axis=1)
    return r - r.mean(axis=1, keepdims=True)


def _row_spearman(pred: np.ndarray, rg: np.ndarray) -> np.ndarray:
    """Spearman of each row of ``pred`` with the same row of the gold scores' centred ranks ``rg``."""
    rp = _centred_ranks(pred)
    den = np.sqrt((rp * rp).sum(axis=1) * (rg * rg).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rp * rg).sum(axis=1) / den, np.nan)


def _aligned(method: pl.DataFrame, base: pl.DataFrame, names: tuple[str, str]) -> pl.DataFrame:
    """Both predictions' test pairs joined on (dataset, subset, pair_index); both must cover the
    same pairs with the same gold scores, else the comparison is refused."""
    def test(frame: pl.DataFrame) -> pl.DataFrame:
        if "split" in frame.columns:
            frame = frame.filter(pl.col("split") == "test")
        return frame.select(*_KEYS, "score", "cosine")

    a, b = test(method), test(base)
    joined = a.join(b, on=list(_KEYS), how="inner", suffix="_base", maintain_order="left")
    if joined.height != a.height or joined.height != b.height:
        raise ValueError(f"predictions of {names[0]} ({a.height} test pairs) and {names[1]} "
                         f"({b.height}) cover different pairs: evaluate both with the same settings")
    if not (joined["score"] == joined["score_base"]).all():
        raise ValueError(f"predictions of {names[0]} and {names[1]}: gold scores differ for the same pairs")
    return joined


def paired_bootstrap(method: pl.DataFrame, base: pl.DataFrame, *, resamples: int = 1000, seed: int = 0,
                     confidence: float = 0.95, names: tuple[str, str] = ("method", "base")) -> Interval:
    """Percentile interval of avg(method) - avg(base) (Spearman x100) over paired resamples of
    the test pairs within each dataset (``predictions.parquet`` frames of one seed each)."""
    if resamples < 1:
        raise ValueError(f"paired_bootstrap: resamples must be >= 1 (got {resamples})")
    joined = _aligned(method, base, names)
    datasets = joined["dataset"].unique(maintain_order=True).to_list()
    rng = np.random.default_rng(seed)
    diffs = np.zeros(resamples, dtype=np.float64)
    observed = 0.0
    for name in datasets:  # datasets in file order: the same draws for the same predictions
        sub = joined.filter(pl.col("dataset") == name)
        gold, ca, cb = (sub[c].to_numpy().astype(np.float64) for c in ("score", "cosine", "cosine_base"))
        rg = _centred_ranks(gold[None])
        observed += float(_row_spearman(ca[None], rg)[0] - _row_spearman(cb[None], rg)[0])
        for start in range(0, resamples, _CHUNK):
            k = min(_CHUNK, resamples - start)
            idx = rng.integers(0, gold.size, size=(k, gold.size))
            rg = _centred_ranks(gold[idx])
            diffs[start:start + k] += _row_spearman(ca[idx], rg) - _row_spearman(cb[idx], rg)
    scale = 100.0 / len(datasets)  # mean over datasets, x100 as in sts.json
    diffs *= scale
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0:
        raise ValueError(f"paired bootstrap of {names[0]} vs {names[1]}: every resample had a constant "
                         "column (too few test pairs)")
    low, high = np.quantile(finite, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return Interval(observed * scale, float(low), float(high), confidence, "paired-bootstrap")


def _seed_avgs(long: pl.DataFrame, method: str) -> dict[int, float]:
    sub = long.filter((pl.col("method") == method) & (pl.col("dataset") == "avg"))
    return dict(zip(sub["seed"].to_list(), sub["spearman"].to_list(), strict=True))


def differences_table(long: pl.DataFrame, predictions: Mapping[tuple[str, int], pl.DataFrame | str],
                      *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                      base_method: Mapping[str, str] = BASE_METHOD) -> pl.DataFrame:
    """One row per run method whose base method also ran: seeds on each side, the difference of
    ``avg`` with its interval, which interval, and the reading in words.

    ``long``: ``sts_long`` rows; ``predictions``: (method, seed) -> predictions frame or path
    (read only for the one-seed bootstrap). Two seeds or more each: Welch over seeds; else the
    paired bootstrap on the lowest seed both ran (or each side's lowest seed)."""
    rows = []
    for method in sorted(set(long["method"].to_list())):
        base = base_method.get(method)
        if base is None:
            continue
        ma, mb = _seed_avgs(long, method), _seed_avgs(long, base)
        if not ma or not mb:
            continue
        if len(ma) >= 2 and len(mb) >= 2:
            iv = welch_interval([ma[s] for s in sorted(ma)], [mb[s] for s in sorted(mb)], confidence)
            how = f"Welch t over seeds ({len(ma)} vs {len(mb)})"
        else:
            common = sorted(set(ma) & set(mb))
            sa, sb = (common[0], common[0]) if common else (min(ma), min(mb))
            missing = [f"{m}/seed{s}" for m, s in ((method, sa), (base, sb)) if (m, s) not in predictions]
            if missing:  # said in the row, never dropped: the workflow always passes them
                rows.append({"method": method, "base": base, "seeds": f"{len(ma)} / {len(mb)}",
                             "difference": ma[sa] - mb[sb], "low": None, "high": None,
                             "interval": "none: one seed needs the paired bootstrap",
                             "reading": f"no interval: predictions.parquet of {', '.join(missing)} not given"})
                continue
            frames = [p if isinstance(p, pl.DataFrame) else pl.read_parquet(p)
                      for p in (predictions[(method, sa)], predictions[(base, sb)])]
            iv = paired_bootstrap(*frames, resamples=resamples, seed=seed, confidence=confidence,
                                  names=(f"{method}/seed{sa}", f"{base}/seed{sb}"))
            seeds = f"seed {sa}" if sa == sb else f"seeds {sa} and {sb}"
            how = f"paired bootstrap over test pairs, {seeds}, {resamples} resamples"
        rows.append({"method": method, "base": base, "seeds": f"{len(ma)} / {len(mb)}",
                     "difference": iv.diff, "low": iv.low, "high": iv.high,
                     "interval": f"{round(100 * confidence)}% {how}", "reading": iv.words()})
    schema = {"method": pl.String, "base": pl.String, "seeds": pl.String, "difference": pl.Float64,
              "low": pl.Float64, "high": pl.Float64, "interval": pl.String, "reading": pl.String}
    return pl.DataFrame(rows, schema=schema)
