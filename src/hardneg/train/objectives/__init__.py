"""Training objectives, one small module per loss (each docstring names its equation)."""

from hardneg.train.objectives.hince import HiNCE
from hardneg.train.objectives.infonce import InfoNCE
from hardneg.train.objectives.listmle import ListMLESAN, listmle
from hardneg.train.objectives.margin import BidirectionalMargin, two_way_margin
from hardneg.train.objectives.osscse import RecallLoss, TwoWayMaxMargin

__all__ = [
    "BidirectionalMargin",
    "HiNCE",
    "InfoNCE",
    "ListMLESAN",
    "RecallLoss",
    "TwoWayMaxMargin",
    "listmle",
    "two_way_margin",
]
