"""The papers' published STS figures (``paper_figures.yaml``, carried as data with their source)
and the report's table that puts each method's own figure beside the paper's for the same backbone.

A figure matches a run when the method is the same and the backbone is the same: the run's
``init_model`` and the figure's, compared by their last path component, lower-cased (so
``google-bert/bert-base-uncased`` or a local copy ``/models/bert-base-uncased`` match
``bert-base-uncased``). Where no paper gives a figure for a backbone, the table says so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from hardneg.report.collect import STS_ORDER
from hardneg.report.methods import read_summary

FIGURES_FILE = Path(__file__).with_name("paper_figures.yaml")
_SOURCE_KEYS = {"paper", "file", "table", "section", "note"}
_FIGURE_KEYS = {"method", "init_model", "source", "row", "scores"}
_PAPER_COLUMNS = (*STS_ORDER[:-1], "paper avg")  # the paper's figures, its Avg. named apart from ours


def _fail(path: Path, where: str, what: str) -> ValueError:
    return ValueError(f"{path}: {where}: {what}")


def load_figures(path: str | Path = FIGURES_FILE) -> dict[str, Any]:
    """The data file, checked: ``columns`` is the report's ``STS_ORDER``; every source has its
    paper, file, table, section and note; every figure names a known source and has one number
    per column. A bad file fails with its path and the offending entry."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the paper figures ({exc})") from exc
    if not isinstance(data, dict) or set(data) != {"columns", "sources", "figures", "no_figures"}:
        raise _fail(path, "top level", "expected exactly the keys columns, sources, figures, no_figures")
    if list(data["columns"]) != list(STS_ORDER):
        raise _fail(path, "columns", f"must be {list(STS_ORDER)} (the report's column order)")
    for sid, src in data["sources"].items():
        if not isinstance(src, dict) or set(src) != _SOURCE_KEYS or not all(
                isinstance(v, str) and v for v in src.values()):
            raise _fail(path, f"sources.{sid}", f"needs non-empty strings {sorted(_SOURCE_KEYS)}")
    seen = set()
    for i, fig in enumerate(data["figures"]):
        where = f"figures[{i}]"
        if not isinstance(fig, dict) or set(fig) != _FIGURE_KEYS:
            raise _fail(path, where, f"needs exactly the keys {sorted(_FIGURE_KEYS)}")
        if fig["source"] not in data["sources"]:
            raise _fail(path, where, f"unknown source {fig['source']!r}")
        scores = fig["scores"]
        if (not isinstance(scores, list) or len(scores) != len(STS_ORDER)
                or not all(isinstance(s, (int, float)) and 0 <= s <= 100 for s in scores)):
            raise _fail(path, where, f"scores must be {len(STS_ORDER)} numbers in [0, 100]")
        key = (fig["method"], fig["init_model"], fig["source"])
        if key in seen:
            raise _fail(path, where, f"duplicate figure for {key}")
        seen.add(key)
    if not isinstance(data["no_figures"], dict):
        raise _fail(path, "no_figures", "must map method -> reason")
    return data


@functools.cache
def _default_figures() -> dict[str, Any]:
    return load_figures(FIGURES_FILE)


def backbone_name(init_model: str) -> str:
    """``google-bert/bert-base-uncased`` -> ``bert-base-uncased`` (the key figures match on)."""
    return str(init_model).rstrip("/").rsplit("/", 1)[-1].lower()


def source_text(source: Mapping[str, str]) -> str:
    """``"SAN Table 3 (§4.3 Main Results)"``: where a figure comes from, for the table."""
    return f"{source['paper']} {source['table']} ({source['section']})"


def figures_for(method: str, init_model: str, data: dict[str, Any] | None = None) -> list[dict]:
    """The papers' figures for ``method`` on ``init_model``'s backbone, in file order."""
    data = data or _default_figures()
    want = backbone_name(init_model)
    return [f for f in data["figures"]
            if f["method"] == method and backbone_name(f["init_model"]) == want]


def _no_figure_text(method: str, init_model: str, data: dict[str, Any]) -> str:
    if method in data["no_figures"]:
        return data["no_figures"][method]
    by_source: dict[str, list[str]] = {}
    for f in data["figures"]:
        if f["method"] == method and f["init_model"] not in by_source.setdefault(f["source"], []):
            by_source[f["source"]].append(f["init_model"])
    if not by_source:
        return f"no paper figure for {method}"
    given = "; ".join(f"{source_text(data['sources'][s])}: {', '.join(m)}" for s, m in by_source.items())
    return f"no paper figure for backbone {init_model} (given: {given})"


def paper_table(ours: pl.DataFrame, init_models: Mapping[str, str],
                data: dict[str, Any] | None = None) -> pl.DataFrame:
    """One row per method and paper figure: our mean ``avg`` over seeds, the paper's figures per
    dataset (``STS_ORDER``, its avg as ``paper avg``), ours minus the paper's avg, and the source; a method whose backbone
    no paper reports gets one row saying so. ``ours``: ``sts_long`` rows; ``init_models``:
    method -> the run's ``init_model`` (the baseline, never trained, has no row)."""
    data = data or _default_figures()
    means = {r["method"]: r["spearman"] for r in
             ours.filter(pl.col("dataset") == "avg").group_by("method").agg(pl.col("spearman").mean())
             .iter_rows(named=True)}
    rows = []
    for method in sorted(init_models):
        init = init_models[method]
        mine = means.get(method)
        figs = figures_for(method, init, data)
        base = {"method": method, "backbone": init, "ours avg": mine}
        if not figs:
            rows.append(base | {c: None for c in _PAPER_COLUMNS} | {"ours − paper": None,
                                                             "source": _no_figure_text(method, init, data)})
            continue
        for fig in figs:
            src = data["sources"][fig["source"]]
            paper = dict(zip(_PAPER_COLUMNS, (float(s) for s in fig["scores"]), strict=True))
            rows.append(base | paper | {
                "ours − paper": None if mine is None else mine - paper["paper avg"],
                "source": f"{source_text(src)}, row {fig['row']}; {src['note']}"})
    schema = {"method": pl.String, "backbone": pl.String, "ours avg": pl.Float64,
              **{c: pl.Float64 for c in _PAPER_COLUMNS}, "ours − paper": pl.Float64, "source": pl.String}
    return pl.DataFrame(rows, schema=schema)


def run_init_models(summaries: Sequence[str | Path]) -> dict[str, str]:
    """method -> ``init_model`` of its runs, from the training ``summary.json`` files (all seeds
    of a method share it; differing ones are listed, comma-separated, and match no figure)."""
    found: dict[str, set[str]] = {}
    for path in summaries:
        rec = read_summary(path)
        s = rec.get("settings") or {}
        method, init = rec.get("method", s.get("method")), s.get("init_model")
        if method is None or init is None:
            raise ValueError(f"{path}: training summary lacks method or settings.init_model")
        found.setdefault(str(method), set()).add(str(init))
    return {m: ", ".join(sorted(v)) for m, v in found.items()}
