"""Negation insertion at the dependency root (``negate``; SNCSE's rule by default, OssCSE App. B)
and its shard view (``inspect``)."""
