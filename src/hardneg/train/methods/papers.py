"""The papers the built-in methods and presets follow (arXiv abstract or ACL Anthology page),
linked from the report's tables and cited in model cards."""

from __future__ import annotations

from hardneg.train.methods.records import Paper

SIMCSE = Paper("SimCSE", "https://arxiv.org/abs/2104.08821")
SNCSE = Paper("SNCSE", "https://arxiv.org/abs/2201.05979")
RANKCSE = Paper("RankCSE", "https://arxiv.org/abs/2305.16726")
SAN = Paper("SAN", "https://aclanthology.org/2025.findings-naacl.461/")
OSSCSE = Paper("OssCSE", "https://aclanthology.org/2023.emnlp-main.448/")
HNCSE = Paper("HNCSE", "https://arxiv.org/abs/2411.12156")
HICL = Paper("HiCL", "https://arxiv.org/abs/2310.09720")
SYNCSE = Paper("SynCSE", None)  # no stable link confirmed
