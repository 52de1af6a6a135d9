"""Gather a run's results into tidy tables (one row per method/seed/dataset, per benchmark...).

Paths follow the workflow's layout: ``results/eval/{experiment}/{method}/seed{seed}/sts.json``,
``results/train/{experiment}/{method}/seed{seed}/metrics.jsonl``, ``benchmarks/<rule>/....tsv``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from hardneg.shards import read_shard

_RUN_RE = re.compile(r"(?P<experiment>[^/]+)/(?P<method>[^/]+)/seed(?P<seed>\d+)/[^/]+$")
# Output column each augmenter adds (augmentation shard contract in the README).
AUG_OUTPUT = {"san": "san", "negation": "negation", "backtranslation": "paraphrase", "mine": "mined"}


def parse_run_path(path: str | Path) -> tuple[str, str, int]:
    """(experiment, method, seed) of a per-run file such as ``.../quick/simcse/seed42/sts.json``."""
    m = _RUN_RE.search(Path(path).as_posix())
    if not m:
        raise ValueError(f"{path}: expected .../<experiment>/<method>/seed<N>/<file>")
    return m["experiment"], m["method"], int(m["seed"])


def _read_json(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{path}: result file missing") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from exc


def sts_long(paths: Iterable[str | Path]) -> pl.DataFrame:
    """One row per (method, seed, dataset) with the headline Spearman ×100 from ``sts.json``
    (for STS12-16 the SentEval "all" figure); ``avg`` is kept as its own dataset row."""
    rows = []
    for path in paths:
        _, method, seed = parse_run_path(path)
        for dataset, m in _read_json(path).items():
            if not isinstance(m, dict) or m.get("spearman") is None:
                continue
            rows.append({"method": method, "seed": seed, "dataset": dataset,
                         "spearman": float(m["spearman"])})
    schema = {"method": pl.String, "seed": pl.Int64, "dataset": pl.String, "spearman": pl.Float64}
    return pl.DataFrame(rows, schema=schema).sort("method", "seed", "dataset")


# One column order for every STS table: the papers' (STS12-16, STS-B, SICK-R, avg).
STS_ORDER = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg")
# Header names the papers use (the result files keep SentEval's dataset names).
STS_HEADERS = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R"}
NO_STD = "—"  # std over one seed is undefined: shown as a dash, never as "± 0.0"


def sts_columns(datasets: Iterable[str]) -> list[str]:
    """``datasets`` in ``STS_ORDER``; any other dataset after them, alphabetically."""
    present = set(datasets)
    return [d for d in STS_ORDER if d in present] + sorted(present - set(STS_ORDER))


def _baseline_first(frame: pl.DataFrame, *by: str) -> pl.DataFrame:
    # Baseline first, then methods alphabetically (stable, whatever order files came in).
    return (frame.with_columns((pl.col("method") != "baseline").alias("_b"))
            .sort("_b", "method", *by).drop("_b"))


def mean_std_text(mean: float, std: float | None, seeds: int) -> str:
    """``"80.60 ± 0.41"``: two decimals, as the papers' tables print them; ``"80.60 ± —"`` for
    one seed, whose sample std is undefined (never ``± 0.00``)."""
    spread = f"{std:.2f}" if seeds > 1 and std is not None else NO_STD
    return f"{mean:.2f} ± {spread}"


def with_mean_std_cell(agg: pl.DataFrame, mean: str = "mean", std: str = "std",
                       seeds: str = "seeds") -> pl.DataFrame:
    """``agg`` with a ``cell`` column of ``mean_std_text`` (the report's and the ablations' cells)."""
    cells = [mean_std_text(m, s, n) for m, s, n in zip(agg[mean], agg[std], agg[seeds], strict=True)]
    return agg.with_columns(pl.Series("cell", cells, dtype=pl.String))


def sts_summary(long: pl.DataFrame) -> pl.DataFrame:
    """Mean ± sample std (ddof=1) over seeds, per method × dataset, wide: one row per method,
    columns in ``STS_ORDER``; a method with one seed shows ``mean ± —``."""
    agg = with_mean_std_cell(
        long.group_by("method", "dataset", maintain_order=True)
        .agg(
            pl.col("spearman").mean().alias("mean"),
            pl.col("spearman").std(ddof=1).alias("std"),
            pl.len().alias("seeds"),
        )
    )
    order = sts_columns(agg["dataset"])
    wide = agg.pivot(on="dataset", index="method", values="cell").select("method", *order)
    seeds = agg.group_by("method").agg(pl.col("seeds").max())
    return _baseline_first(wide.join(seeds, on="method"))


def sts_per_seed(long: pl.DataFrame) -> pl.DataFrame:
    """One row per method × seed, Spearman ×100 per dataset in ``STS_ORDER`` (same as the summary)."""
    if long.height == 0:
        return pl.DataFrame(schema={"method": pl.String, "seed": pl.Int64})
    wide = long.pivot(on="dataset", index=["method", "seed"], values="spearman")
    return _baseline_first(wide.select("method", "seed", *sts_columns(long["dataset"])), "seed")


def cont_oppn_long(paths: Iterable[str | Path]) -> pl.DataFrame:
    """One row per (method, seed, group, part) from ``cont_oppn.json`` (OssCSE §3.3); the
    weighted average over groups is the group ``weighted``."""
    rows = []
    for path in paths:
        _, method, seed = parse_run_path(path)
        data = _read_json(path)
        groups = dict(data.get("groups", {}))
        if data.get("weighted_average"):
            groups["weighted"] = data["weighted_average"]
        for group, parts in groups.items():
            for part, m in parts.items():
                value = m.get("spearman") if isinstance(m, dict) else m
                if part not in ("cont", "oppn") or value is None:
                    continue
                rows.append({"method": method, "seed": seed, "group": group, "part": part,
                             "spearman": float(value)})
    schema = {"method": pl.String, "seed": pl.Int64, "group": pl.String, "part": pl.String,
              "spearman": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def training_curves(paths: Iterable[str | Path]) -> pl.DataFrame:
    """Rows of every ``metrics.jsonl`` (kind train: loss; kind eval: STS-B dev) with method/seed."""
    rows = []
    for path in paths:
        _, method, seed = parse_run_path(path)
        for i, line in enumerate(Path(path).read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{i}: invalid JSON line ({exc})") from exc
            rows.append({"method": method, "seed": seed, "kind": rec.get("kind", "train"),
                         "step": int(rec.get("step", 0)), "loss": rec.get("loss"),
                         "stsb_dev": rec.get("stsb_dev")})
    schema = {"method": pl.String, "seed": pl.Int64, "kind": pl.String, "step": pl.Int64,
              "loss": pl.Float64, "stsb_dev": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def _num(row: dict, key: str) -> float | None:
    v = row.get(key)
    return float(v) if v not in (None, "") else None


def benchmarks_table(bench_dir: str | Path) -> pl.DataFrame:
    """Every Snakemake ``benchmark:`` file under ``bench_dir``: rule (first folder), job (the
    rest of the path), wall seconds, peak RSS (MB), CPU seconds."""
    bench_dir = Path(bench_dir)
    rows = []
    for tsv in sorted(bench_dir.rglob("*.tsv")):
        rel = tsv.relative_to(bench_dir)
        try:
            frame = pl.read_csv(tsv, separator="\t", null_values=["-", "NA"], infer_schema_length=0)
        except Exception as exc:
            raise ValueError(f"{tsv}: unreadable benchmark file ({exc})") from exc
        if frame.height == 0:
            continue
        last = frame.row(frame.height - 1, named=True)  # last repeat, if benchmark repeated
        rows.append({"rule": rel.parts[0] if len(rel.parts) > 1 else rel.stem,
                     "job": rel.with_suffix("").as_posix(), "seconds": _num(last, "s"),
                     "max_rss_mb": _num(last, "max_rss"), "cpu_time_s": _num(last, "cpu_time")})
    schema = {"rule": pl.String, "job": pl.String, "seconds": pl.Float64,
              "max_rss_mb": pl.Float64, "cpu_time_s": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def augmentation_summary(shards: Iterable[str | Path], examples: int = 5) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(statistics, examples) of augmentation shards: per augmenter × status × reason the row
    count (so kept + dropped add up to the corpus), and the first ``examples`` non-dropped rows
    per augmenter with the original and its augmentation."""
    stats, samples = [], []
    for path in shards:
        frame = read_shard(path)
        if frame.height == 0:
            continue
        for col in ("id", "text", "status", "augmenter"):
            if col not in frame.columns:
                raise ValueError(f"{path}: augmentation shard lacks column '{col}'")
        reason = frame["reason"] if "reason" in frame.columns else pl.Series([None] * frame.height)
        stats.append(
            frame.select("augmenter", "status").with_columns(reason.cast(pl.String).alias("reason"))
        )
        aug = frame["augmenter"][0]
        out_col = AUG_OUTPUT.get(aug)
        if out_col and out_col in frame.columns:
            samples.append(
                frame.filter(pl.col("status") != "dropped")
                .head(examples)
                .select("augmenter", "id", pl.col("text").alias("original"),
                        pl.col(out_col).cast(pl.String).alias("augmented"))
            )
    stat_schema = {"augmenter": pl.String, "status": pl.String, "reason": pl.String, "rows": pl.UInt32}
    if stats:
        stat = (pl.concat(stats).group_by("augmenter", "status", "reason")
                .agg(pl.len().alias("rows")).sort("augmenter", "status", "reason", nulls_last=False))
    else:
        stat = pl.DataFrame(schema=stat_schema)
    ex_schema = {"augmenter": pl.String, "id": pl.Int64, "original": pl.String, "augmented": pl.String}
    if samples:
        ex = pl.concat(samples).group_by("augmenter", maintain_order=True).head(examples)
    else:
        ex = pl.DataFrame(schema=ex_schema)
    return stat, ex
