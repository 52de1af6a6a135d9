"""Training objectives, one small module per loss (each docstring names its equation)."""

from hardneg.train.objectives.hard_negative import HardNegativeInfoNCE
from hardneg.train.objectives.hince import HiNCE
from hardneg.train.objectives.infonce import InfoNCE
from hardneg.train.objectives.listmle import ListMLESAN, listmle
from hardneg.train.objectives.margin import BidirectionalMargin, two_way_margin
from hardneg.train.objectives.osscse import RecallLoss, TwoWayMaxMargin
from hardneg.train.objectives.rankcse import (
    RankingConsistency,
    RankingDistillation,
    js_divergence,
    listnet,
)

__all__ = [
    "BidirectionalMargin",
    "HardNegativeInfoNCE",
    "HiNCE",
    "InfoNCE",
    "ListMLESAN",
    "RankingConsistency",
    "RankingDistillation",
    "RecallLoss",
    "TwoWayMaxMargin",
    "js_divergence",
    "listmle",
    "listnet",
    "two_way_margin",
]
