"""Evaluation: STS (SentEval/SimCSE conventions), Cont./Oppn. splits, transformation probe, plots."""
