"""Self-contained HTML tables and PNG figures for the report (no external assets: the files are
embedded by ``snakemake --report`` and must render offline)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from hardneg.plotting import pyplot, save_png
from hardneg.report.collect import STS_HEADERS, sts_columns
from hardneg.shards.io import atomic_path

_CSS = (
    "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin:0.5em 0}"
    "th,td{border:1px solid #999;padding:3px 8px;text-align:right}"
    "th{background:#dde7f3}td.l,th.l{text-align:left}caption{font-weight:bold;text-align:left}"
    ".row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}.row>div{flex:0 0 auto}"
    ".row>div:last-child{flex:1 1 600px;min-width:600px;max-width:1000px}"
    "figure{margin:0.5em 0}figure img{max-width:100%;border:1px solid #ccc}"
    "figcaption{font-size:90%;color:#444}a{color:#1a4f8b}"
)


# Characters a cell shows as ``\uXXXX`` text: controls (Cc, but tab and newline) and the format
# characters that reorder or hide text (bidi controls, UAX #9; zero-width characters): corpus and
# augmentation text reaches the report, and U+202E would make a cell read backwards.
_SHOWN_ESCAPED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e"
                            "\u2060-\u2069\ufeff]")


def cell_text(text: str) -> str:
    """``text`` HTML-escaped, with control and bidi characters written out as ``\\uXXXX``."""
    return html.escape(_SHOWN_ESCAPED.sub(lambda m: f"\\u{ord(m[0]):04X}", text))


def _is_number_text(text: str) -> bool:
    # "61.00 ± 1.41", "50.00 ± —", "-3.2": numbers, right-aligned like the float cells.
    return text[:1].isdigit() or text[:1] == "-" and text[1:2].isdigit()


def table_html(frame: pl.DataFrame, caption: str, table_id: str,
               links: Mapping[str, str] | None = None) -> str:
    """One <table> (first column left-aligned, numbers rounded to 2 decimals); a first-column
    value found in ``links`` becomes a link to that URL (the method -> paper links)."""
    links = links or {}

    def numeric(c: str) -> bool:
        if frame.schema[c] != pl.String:
            return True
        vals = [v for v in frame[c].to_list() if v]
        return bool(vals) and all(_is_number_text(v) for v in vals)

    head = "".join(
        f'<th class="{"l" if i == 0 or not numeric(c) else ""}">{cell_text(c)}</th>'
        for i, c in enumerate(frame.columns)
    )
    body = []
    for row in frame.iter_rows():
        cells = []
        for i, v in enumerate(row):
            text = "" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))
            cls = "l" if i == 0 or isinstance(v, str) and not _is_number_text(text) else ""
            inner = cell_text(text)
            if i == 0 and text in links:
                inner = (f'<a href="{html.escape(links[text], quote=True)}" target="_blank" '
                         f'rel="noopener" title="paper">{inner}</a>')
            cells.append(f'<td class="{cls}">{inner}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    if not body:
        body.append(f'<tr><td class="l" colspan="{max(1, frame.width)}">(no rows)</td></tr>')
    return (f'<table id="{table_id}"><caption>{html.escape(caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def figure_html(png: str | Path, caption: str) -> str:
    """A PNG embedded as a data URI (the page stays self-contained for ``snakemake --report``)."""
    data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(caption, quote=True)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def beside(*parts: str) -> str:
    """Snippets side by side (a table and its plot), wrapping below on narrow screens."""
    return '<div class="row">' + "".join(f"<div>{p}</div>" for p in parts) + "</div>"


def write_page(path: str | Path, title: str, parts: list[str]) -> Path:
    """A standalone HTML page of the given table/paragraph snippets (written atomically)."""
    doc = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_CSS}</style></head><body><h2>{html.escape(title)}</h2>{''.join(parts)}</body></html>\n")
    with atomic_path(path) as tmp:
        tmp.write_text(doc, encoding="utf-8")
    return Path(path)


DPI = 100  # the report figures' resolution (the evaluation plots use 110)


def _save_empty(fig, path: str | Path, text: str) -> Path:
    """Save a figure that has no data: ``text`` in its first panel, every panel blank."""
    for k, ax in enumerate(fig.axes):
        ax.text(0.5, 0.5, text if k == 0 else "", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    return save_png(fig, path, DPI)


def plot_sts(long: pl.DataFrame, path: str | Path) -> Path:
    """Grouped bars: Spearman ×100 per dataset and method, error bars = std over seeds."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    if long.height == 0:
        return _save_empty(fig, path, "no STS results")
    agg = long.group_by("method", "dataset").agg(
        pl.col("spearman").mean().alias("m"), pl.col("spearman").std(ddof=1).fill_null(0).alias("s"))
    datasets = sts_columns(agg["dataset"])  # the tables' column order
    methods = sorted(set(agg["method"]), key=lambda m: (m != "baseline", m))
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        sub = {r["dataset"]: r for r in agg.filter(pl.col("method") == method).iter_rows(named=True)}
        xs = [i + j * width for i in range(len(datasets))]
        ax.bar(xs, [sub.get(d, {}).get("m", 0.0) for d in datasets], width,
               yerr=[sub.get(d, {}).get("s", 0.0) for d in datasets], label=method, capsize=2)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(datasets))],
                  [STS_HEADERS.get(d, d) for d in datasets], rotation=20)
    ax.set_ylabel("Spearman ×100")
    ax.set_title("STS test (mean ± std over seeds)")
    ax.margins(y=0.18)  # headroom: the legend does not cover the tallest bars
    ax.legend(fontsize=8, ncol=min(4, len(methods)), loc="upper right")
    fig.tight_layout()
    return save_png(fig, path, DPI)


def plot_cont_oppn(long: pl.DataFrame, path: str | Path) -> Path:
    """Cont. vs Oppn. Spearman per method (weighted average over datasets; OssCSE Table 2)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    w = long.filter(pl.col("group") == "weighted")
    if w.height == 0:
        return _save_empty(fig, path, "no Cont./Oppn. results")
    agg = w.group_by("method", "part").agg(pl.col("spearman").mean().alias("m"),
                                           pl.col("spearman").std(ddof=1).fill_null(0).alias("s"))
    methods = sorted(set(agg["method"]), key=lambda m: (m != "baseline", m))
    for k, part in enumerate(("cont", "oppn")):
        sub = {r["method"]: r for r in agg.filter(pl.col("part") == part).iter_rows(named=True)}
        ax.bar([i + k * 0.4 for i in range(len(methods))], [sub.get(m, {}).get("m", 0) for m in methods],
               0.4, yerr=[sub.get(m, {}).get("s", 0) for m in methods], label=part.capitalize() + ".",
               capsize=2)
    ax.set_xticks([i + 0.2 for i in range(len(methods))], methods, rotation=20)
    ax.set_ylabel("Spearman ×100")
    ax.set_title("Cont./Oppn. (weighted average)")
    ax.legend()
    fig.tight_layout()
    return save_png(fig, path, DPI)


def plot_curves(curves: pl.DataFrame, path: str | Path) -> Path:
    """Training loss and STS-B dev Spearman against step, one line per method/seed."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
    if curves.height == 0:
        return _save_empty(fig, path, "no training curves")
    for (method, seed), sub in curves.sort("step").group_by(["method", "seed"], maintain_order=True):
        tr = sub.filter((pl.col("kind") == "train") & pl.col("loss").is_not_null())
        ev = sub.filter((pl.col("kind") == "eval") & pl.col("stsb_dev").is_not_null())
        ax1.plot(tr["step"], tr["loss"], label=f"{method}/s{seed}")
        ax2.plot(ev["step"], ev["stsb_dev"], "o-", label=f"{method}/s{seed}")
    ax1.set(xlabel="step", ylabel="loss", title="training loss")
    ax2.set(xlabel="step", ylabel="Spearman ×100", title="STS-B dev (model selection)")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    return save_png(fig, path, DPI)


def plot_benchmarks(bench: pl.DataFrame, path: str | Path) -> Path:
    """Wall time and peak memory per rule (summed / max over the rule's jobs)."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
    if bench.height == 0:
        return _save_empty(fig, path, "no benchmark files")
    agg = bench.group_by("rule").agg(pl.col("seconds").sum(), pl.col("max_rss_mb").max()).sort("rule")
    ax1.barh(agg["rule"], agg["seconds"].fill_null(0))
    ax1.set(xlabel="wall seconds (sum over jobs)", title="time per rule")
    ax2.barh(agg["rule"], agg["max_rss_mb"].fill_null(0), color="tab:orange")
    ax2.set(xlabel="peak RSS MB (max over jobs)", title="memory per rule")
    fig.tight_layout()
    return save_png(fig, path, DPI)
