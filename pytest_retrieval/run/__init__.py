"""Getting rankings: the stage order, calling the retriever (``retriever``), where a run comes
from (run files, the cache, the retriever: ``source``), the cache, the xdist shards, the depth
plan, the determinism probe, the executors of ``pytest-retrieval run`` and the user-code
loader (``factories``), and the pure checks of a run's rankings (``checks``).
"""
