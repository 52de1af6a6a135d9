"""What each training view is encoded from: its text and its prompt template, decided here for
every forward path (the ordinary views pass, HiCL's segments, the teachers, the SynCSE pool index).

Views: ``anchor`` and ``positive`` (the same sentence in SNCSE's two templates), then the extra
views ``negation``, ``paraphrase``, ``syncse`` (pool negatives) and ``san``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hardneg.train.settings import TrainSettings

EXTRA_VIEWS = ("negation", "paraphrase", "san", "syncse")  # views besides anchor/positive that get a template
VIEW_TEMPLATE_CHOICES = ("anchor", "positive")
# SNCSE train_SNCSE.py (Different_Prompt_Negation) and SAN's SNCSE+SAN script wrap the negation
# and the SAN negative in the POSITIVE's template ("This sentence of ..."); OssCSE has no code and
# builds on SNCSE, so its paraphrase follows the same convention (docs/deviations.md).
DEFAULT_VIEW_TEMPLATES = {"negation": "positive", "paraphrase": "positive", "san": "positive",
                          "syncse": "positive"}  # SynCSE pool negatives: like the other negatives
# the order the views pass encodes them in (and HiCL's segment pass); SAN has a pass of its own
VIEWS_PASS_ORDER = ("anchor", "positive", "negation", "paraphrase", "syncse")


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


def views_pass(s: TrainSettings, texts: Sequence[str],
               extra: dict[str, list[str]]) -> list[tuple[str, list[str], str | None]]:
    """(view, sentences, template) of every view the views pass encodes, in ``VIEWS_PASS_ORDER``
    (anchor and positive from ``texts``, the others from the ``extra`` columns present)."""
    cols = {"anchor": texts, "positive": texts, **extra}
    return [(v, list(cols[v]), view_template(s, v)) for v in VIEWS_PASS_ORDER if v in cols]
