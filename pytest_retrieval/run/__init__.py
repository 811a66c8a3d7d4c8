"""Getting rankings: the stage order, calling the retriever (``retriever``), where a run comes
from (run files, the cache, the retriever: ``source``), the cache, the xdist shards, the depth
plan, the determinism probe, the executors of ``pytest-retrieval run`` and the user-code
loader (``factories``), and the pure checks of a run's rankings (``checks``).

Modules:

* ``stages``: the stage names, their pipeline order (``pipeline_order``), the final stage
  (``final_stage``: the default stage; ``stage_or_final``: the stage of something that may name
  its own) and the phrase for a comparison of two stages (``stage_change``).
* ``retriever/``: calling the retriever (shapes, context, items, calling); every name
  importable from ``retriever``.
* ``factories``: ``module:function`` settings: the one guarded loader of user code
  (``import_object``; ``call_user``; ``UserCodeError`` with the user's traceback trimmed to
  their frames); the doc-id option.
* ``depthplan``: how deep the retriever is asked: the first depth and why
  (``retrieval_depth``, the largest cutoff, never below what the retriever was built with),
  which queries are asked again deeper and up to where (``retrieval_max_depth``); ``DepthPlan``.
* ``cachekey``: one row of the retriever-output cache: ``CacheKey`` (the retriever's identity,
  the corpus and doc-id fingerprints), ``CacheEntry`` and its stored text, the row checksum.
* ``store``: the retriever-output cache: ``RunCache`` (SQLite, WAL, checksummed rows; read-only
  when its folder is), the modes, ``CacheCorrupt`` and its kind, which files are ours to delete
  (``is_our_cache``).
* ``shards``: sharing the retrieval phase among xdist workers: the shard store (SQLite claims,
  work-stealing, the life lock that tells a dead claimant from a live one, a dead worker's shard
  failed as "worker crashed", the worker that completed the last shard), the outcome codec.
* ``source``: where the run comes from: run files, the cache (``use``/``refresh``/``replay``)
  or the retriever (``obtain``: the run's facts in, the outcomes and their ``RunInfo`` out).
* ``shortrankings``: a ranking shorter than the cutoffs scored (``short_rankings``), chunks
  that collapsed and the knob that fills K (``collapse_fix``), applied to a run
  (``RankedRun``, ``find_short_rankings``, ``depth_problem``).
* ``checks``: the checks that make a run's numbers meaningless when they fail: ids that never
  match or only look alike (``normalisation_pairs``), judgment coverage (``gated_cutoffs``,
  ``stage_coverage``), a ``retrieval_doc_id`` no item has, every query failed; each takes the
  run's facts, never a session.
* ``determinism``: the determinism probe (``DeterminismProbe``: when it runs, which rankings
  changed, which cached ones are stale) and the extra runs of a multi-run baseline
  (``run_checks``).
* ``executors``: running the retriever over a golden set outside pytest (``pytest-retrieval
  run``): the in-process executor and Ray Data's actor pool.

Decisions that live here:

* the default stage (the final one): ``stages.final_stage`` (``stages.stage_or_final`` for
  something that may name its own);
* the depth asked of the retriever, asking a query again deeper: ``depthplan.plan_depth``;
* run files, cache or retriever; hit, miss, replay; which queries the cache served:
  ``source.obtain``, ``source.served_from_cache``;
* the determinism probe, the extra runs, a stale cache: ``determinism.run_checks``;
* when a run's numbers would be meaningless: ``checks`` (short rankings: ``shortrankings``);
* what a cache key holds: ``cachekey``; when a cache file is damaged and whether it is ours:
  ``store`` (``CacheCorrupt.kind``, ``is_our_cache``);
* when an xdist worker holding a shard is dead, and what its queries say: ``shards``
  (``alive``, ``crashed_outcomes``);
* importing and calling user code, and the traceback shown: ``factories``.
"""
