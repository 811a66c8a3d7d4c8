"""The session of one pytest run, without pytest: ``RetrievalSession`` (the run, the scores,
the gate records, the verdict), the run checks applied to it (``findings``), this run against
the baseline and the ledger, and the xdist payload a worker sends.

Modules:

* ``session``: ``RetrievalSession``: the held-out policy applied (``scope``), the run, scores,
  gate records, the depth asked of the retriever, its snapshot, the baseline it writes
  (``baseline_snapshot``), its regression checks and their family, the session's ``Verdict``.
* ``findings``: the run checks applied to a session: the short-ranking warning, judgment
  coverage where the gates look, what stops the run (``refusal``, ``every_query_failed``), why
  no baseline may be written (``without_judged_ids``).
* ``ledger``: a session and the ledger: the baselines it takes from the ledger, the entry it
  records (``entry_of``, ``record``), the headroom warning.
* ``payload``: the xdist payload a worker sends and its merge.

Decisions that live here:

* the depth each ranking should hold: ``RetrievalSession.effective_depth``;
* when a compared Score is a gate: ``RetrievalSession.record_score``, ``settle_test``;
* a run with no numbers, kept: ``RetrievalSession.stop`` (a ``verdict.Stop`` found by
  ``run.checks`` and applied by ``findings``).
"""
