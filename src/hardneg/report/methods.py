"""The report's method table: each trained method's paper source and its non-default deviations.

The reading column says whether a run trained the paper's or the reference code's reading
(``hardneg.train.reading``). A deviation is a training setting whose value differs from the
method's preset (the papers' values), read from each run's ``summary.json`` (``settings``); bookkeeping settings and the run's
identity (method, seed, init_model) are not deviations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from hardneg.train import methods as registry
from hardneg.train.reading import reading
from hardneg.train.settings import NON_STRUCTURAL, TrainSettings, dotted_items

_IDENTITY = frozenset({"method", "seed", "init_model", "show_progress"})



def read_summary(path: str | Path) -> dict:
    """One training ``summary.json``; an unreadable one is an error naming the file."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read the training summary ({exc})") from exc

def paper_url(method: str) -> str | None:
    """The link of the paper ``method``'s preset follows, or None (no preset, no confirmed link)."""
    p = registry.presets().get(method)
    return p.paper.url if p is not None and p.paper is not None else None


def paper_links(methods: Iterable[str]) -> dict[str, str]:
    """method -> paper URL for those of ``methods`` that have one (the tables' method links)."""
    return {m: url for m in methods if (url := paper_url(m))}


def source(method: str) -> str:
    """The paper section / reference file ``method``'s preset takes its values from."""
    p = registry.presets().get(method)
    return p.source if p is not None else "(no source recorded)"


def deviations(settings: dict) -> list[str]:
    """``key: preset -> run`` for every setting of a run that differs from its method's preset (a
    method's own setting by its dotted name, ``method_settings.hicl.alpha``)."""
    method = settings.get("method")
    registry.load_modules(settings.get("method_modules"))  # a researcher's own method's preset
    if method not in registry.presets():
        return [f"method {method!r}: no preset"]
    p = registry.preset(method)
    origin = registry.module_of(method)
    base = TrainSettings.from_dict({**p.settings, "method": method, "allow_untrained_teacher": True,
                                    **({"method_modules": [origin]} if origin else {})}).to_dict()
    base, settings = dotted_items(base), dotted_items(settings)
    out = []
    for key in sorted(set(settings) | {k for k in base if k.startswith("method_settings.")}):
        if key in _IDENTITY or key in NON_STRUCTURAL:
            continue
        if key == "allow_untrained_teacher" and not settings[key]:
            continue
        if base.get(key) != settings.get(key):
            out.append(f"{key}: {json.dumps(base.get(key))} -> {json.dumps(settings.get(key))}")
    return out


def method_table(summaries: Iterable[str | Path]) -> pl.DataFrame:
    """One row per method: paper source, seeds, and the deviations (identical across seeds, else
    listed per seed)."""
    by_method: dict[str, dict[int, list[str]]] = {}
    readings: dict[str, set[str]] = {}
    for path in summaries:
        rec = read_summary(path)
        s = rec.get("settings") or {}
        method = str(rec.get("method", s.get("method")))
        by_method.setdefault(method, {})[int(rec.get("seed", -1))] = deviations(s)
        readings.setdefault(method, set()).add(rec.get("reading") or reading(s))
    rows = []
    for method in sorted(by_method):
        seeds = by_method[method]
        devs = {tuple(v) for v in seeds.values()}
        text = ("; ".join(next(iter(devs))) or "none") if len(devs) == 1 else \
            " | ".join(f"seed {k}: {'; '.join(v) or 'none'}" for k, v in sorted(seeds.items()))
        rows.append({"method": method, "paper source": source(method),
                     "reading": " | ".join(sorted(readings[method])),
                     "seeds": ", ".join(str(k) for k in sorted(seeds)), "non-default settings": text})
    schema = {"method": pl.String, "paper source": pl.String, "reading": pl.String, "seeds": pl.String,
              "non-default settings": pl.String}
    return pl.DataFrame(rows, schema=schema)
