"""Data: downloads (mirror, resume, checksums), corpus preparation, SentEval readers."""
