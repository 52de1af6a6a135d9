"""Back-translation: round trips through pivot languages (``translate`` with the ``apertium`` or
``seq2seq`` backend), the MER-filtered paraphrase view (``paraphrase``, OssCSE §3) and the shard
view (``inspect``)."""
