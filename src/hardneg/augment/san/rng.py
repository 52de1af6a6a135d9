"""Counter-based random numbers for SAN: uniform(seed, sentence id, iteration, position, stream).

Every random draw of mask-predict is a pure function of its coordinates, so a sentence gets the
same masks and samples whatever batch, shard, worker or device it is processed in
(determinism). SplitMix64 finalisers (Steele et al., 2014) mix the coordinates; no state is kept.
"""

from __future__ import annotations

import numpy as np

STREAM_MASK = 0  # Bernoulli masking draws
STREAM_SAMPLE = 1  # token sampling draws (decoding=sample)

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * _M1
        x = x ^ (x >> np.uint64(27))
        x = x * _M2
        return x ^ (x >> np.uint64(31))


def uniform(seed: int, sentence_ids: np.ndarray, iteration: int, length: int, stream: int) -> np.ndarray:
    """Uniform [0, 1) float64 array of shape (len(sentence_ids), length)."""
    sid = np.asarray(sentence_ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + _GOLDEN)
        key = _mix(key ^ (np.uint64(iteration) << np.uint64(32)) ^ np.uint64(stream))
        row = _mix(key ^ (sid * _GOLDEN))  # (B,)
        pos = np.arange(length, dtype=np.uint64) * _M2  # (L,)
        bits = _mix(row[:, None] ^ pos[None, :] + _GOLDEN)
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
