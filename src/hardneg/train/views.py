"""What each training view is encoded from: its text and its prompt template, decided here for
every forward path (the ordinary views pass, HiCL's segments, the teachers, the SynCSE pool index).

Views: ``anchor`` and ``positive`` (the same sentence in SNCSE's two templates), then the extra
views ``negation``, ``paraphrase``, ``syncse`` (pool negatives), ``san`` and ``mined`` (a corpus
neighbour, hardneg.augment.mine). ``negative_views`` lets the mined column stand in for the
SAN or the negation view (HiNCE, BML): the view keeps its encoding, only its text changes.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hardneg.train.settings import TrainSettings

EXTRA_VIEWS = ("negation", "paraphrase", "san", "syncse", "mined")  # views besides anchor/positive that get a template
VIEW_TEMPLATE_CHOICES = ("anchor", "positive")
# SNCSE train_SNCSE.py (Different_Prompt_Negation) and SAN's SNCSE+SAN script wrap the negation
# and the SAN negative in the POSITIVE's template ("This sentence of ..."); OssCSE has no code and
# builds on SNCSE, so its paraphrase follows the same convention (docs/deviations.md).
DEFAULT_VIEW_TEMPLATES = {"negation": "positive", "paraphrase": "positive", "san": "positive",
                          "syncse": "positive", "mined": "positive"}  # pool/mined negatives: like the others
# train_SNCSE.py (Sense-GVT/SNCSE and SAN's SNCSE+SAN / RLRD+SAN copies): PUNCTUATION =
# list(string.punctuation); " ." is appended to the anchor/positive sentence and to the negation,
# never to SAN's negative (SAN's scripts comment that line out)
PUNCTUATION = frozenset(string.punctuation)
# a mined negative is another corpus sentence: it gets the anchor's " ." (an SNCSE-style preset)
PERIOD_VIEWS = ("anchor", "positive", "negation", "mined")
# the order the views pass encodes them in (and HiCL's segment pass); SAN has a pass of its own
VIEWS_PASS_ORDER = ("anchor", "positive", "negation", "paraphrase", "syncse", "mined")
# views whose text another augmentation column may supply (train setting negative_views)
NEGATIVE_SOURCES = {"san": ("san", "mined"), "negation": ("negation", "mined")}


def view_template(s: TrainSettings, view: str) -> str | None:
    """The template ``view`` is encoded with (None without a prompt): anchor and positive take
    ``templates[0]`` / ``templates[1]``, every other view the one ``view_templates`` names."""
    if not s.templates:
        return None
    if view == "anchor":
        return s.templates[0]
    if view == "positive":
        return s.templates[1]
    which = {**DEFAULT_VIEW_TEMPLATES, **(s.view_templates or {})}[view]
    return s.templates[0] if which == "anchor" else s.templates[1]


def with_period(sentence: str) -> str:
    """``sentence + " ."`` when its last non-space character is not ASCII punctuation
    (train_SNCSE.py: ``if sentence.strip()[-1] not in PUNCTUATION: sentence = sentence + " ."``);
    an empty sentence, on which the reference fails, is left as it is."""
    stripped = sentence.strip()
    return sentence + " ." if stripped and stripped[-1] not in PUNCTUATION else sentence


def view_texts(s: TrainSettings, view: str, sentences: Sequence[str],
               anchors: Sequence[str] | None = None) -> list[str]:
    """The text ``view`` is tokenized from: with ``append_period``, SNCSE's " ." on the anchor,
    positive and negation; with ``negation_period_fallback`` too, the negation of every row whose
    anchor got the period is SNCSE's fallback ``"Not " + anchor + " ."`` (train_SNCSE.py looks the
    negation up with the period-appended sentence as key, which misses for exactly those rows).
    ``anchors``: the rows' corpus sentences (needed for that fallback)."""
    if not s.append_period or view not in PERIOD_VIEWS:
        return list(sentences)
    if view == "negation" and s.negation_period_fallback:
        if anchors is None or len(anchors) != len(sentences):
            raise ValueError("train setting 'negation_period_fallback': the negation view needs its anchors")
        out = []
        for neg, a in zip(sentences, anchors):
            keyed = with_period(a)
            out.append(with_period("Not " + keyed) if keyed != a else with_period(neg))
        return out
    return [with_period(x) for x in sentences]


def views_pass(s: TrainSettings, texts: Sequence[str],
               extra: dict[str, list[str]]) -> list[tuple[str, list[str], str | None]]:
    """(view, text, template) of every view the views pass encodes, in ``VIEWS_PASS_ORDER``
    (anchor and positive from ``texts``, the others from the ``extra`` columns present)."""
    cols = {"anchor": texts, "positive": texts, **extra}
    return [(v, view_texts(s, v, cols[v], texts), view_template(s, v)) for v in VIEWS_PASS_ORDER if v in cols]


def data_views(s: TrainSettings) -> dict[str, str]:
    """view -> the training-data column its text comes from, for every view read from augmentation
    shards (``negative_views`` may name the mined column for the SAN or the negation view)."""
    src = s.negative_views or {}
    out: dict[str, str] = {}
    if s.negatives == "san":
        out["san"] = src.get("san", "san")
    if s.bml_weight > 0 or s.margin_weight > 0 or s.post_process:
        out["negation"] = src.get("negation", "negation")
    if s.margin_weight > 0:
        out["paraphrase"] = "paraphrase"
    if s.negatives == "mined":
        out["mined"] = "mined"
    return out
