"""Regressions against a baseline: the per-query snapshot, the baseline file, re-scoring, the
regression rule in steps (pairs, family, outcome, rule), the run ledger, its history, and which
commit a run measured (``commitinfo``).

Modules:

* ``snapshot``: the model of per-query quality: ``Snapshot``, ``QuerySnapshot`` and their
  document form (rounded floats, label and text hashes), ``build_snapshot``,
  ``average_snapshots``, ``snapshot_mean``; how far a stored ranking may have been cut
  (``stored_cut``).
* ``baseline``: the baseline file: dump, stamp, load (the schema versions,
  ``snapshot_problems``); the format only.
* ``recording``: a run and its baseline, from facts: the metrics a snapshot holds
  (``snapshot_specs``), the settings it records (``snapshot_settings``), a query's ranking and
  ids as returned, the queries that failed in extra runs.
* ``rescore``: re-scoring a baseline's stored rankings, and this run's, against the current
  labels (``--retrieval-baseline-mode=rescore``; ``why_not_rescorable``).
* ``outcome``: what one regression check concluded: ``RegressionOutcome`` (``of_budget``: the
  one way a check's outcome is made), ``QueryDiff`` (how one query moved), their builtins form.
* ``pairs``: are two snapshots comparable (``setting_differs``, ``compared_stages``;
  ``strict``/``intersect``/``rescore``), the pairs one budget compares (``pair_queries``);
  ``CompareOptions`` (``from_settings``: a pytest run's; ``from_recorded``: a stored run's).
* ``family``: the family of a session's regression checks (``Family``, ``family``: which checks
  form it, their adjusted p-values), the line naming it; ``Against``: a check with a baseline
  of its own (a ledger entry), in the same family.
* ``rule``: the regression rule: pair, test, explain -> ``RegressionOutcome`` (``compare``,
  ``compare_all``: the test, the message, the per-query moves and unjudged holes).
* ``ledger``: the run ledger: ``Ledger`` (one SQLite file: WAL, one transaction per write,
  checksummed compressed rows), ``LedgerEntry`` (a recorded run; ``usable``: ok and clean),
  labels, ``merge_from``, ``prune``; ``LedgerError``.
* ``ledger_baseline``: a run and the ledger, from facts (``LedgerRun``): the merge-base
  baseline (``merge_base_baseline``), the anchors of ``since=`` budgets
  (``anchor_baselines``), the headroom warning, an entry re-scored under today's labels
  (``rescored``), what an entry keeps.
* ``history``: the ledger's history (``ledger show``, ``ledger trend``): a metric's means per
  column (``series``), the sparkline, the advisory Mann-Kendall trend test with Sen's slope,
  the terminal, Markdown and HTML forms.
* ``commitinfo``: which commit a run measured: ``git`` without a shell, with a timeout
  (``GitError``), the CI's variables (``ci_environment``), ``CommitInfo``, the merge-base with
  the target branch (``merge_base``, ``target_branch``), the first-parent chain.

Decisions that live here:

* whether a baseline and a run are comparable, which queries pair: ``pairs.pair_queries``;
  whether a recorded setting makes them incomparable: ``pairs.setting_differs``; which stage
  of each side a budget compares: ``pairs.compared_stages``;
* whether a drop regressed: ``rule.compare``;
* the options of a comparison: ``pairs.CompareOptions`` (``from_settings``,
  ``from_recorded``);
* a budget's check: ``outcome.RegressionOutcome.of_budget``;
* which checks form the family: ``family.family`` (once per session:
  ``RetrievalSession.regression_family``);
* how far a stored ranking may have been cut and what rescore cannot re-score:
  ``snapshot.stored_cut``, ``rescore.why_not_rescorable``;
* which ledger entry a budget is judged against, re-scored how: ``ledger_baseline``
  (``best_entry``, ``merge_base_baseline``, ``anchor_baselines``, ``rescored``);
* when a ledger entry can be a baseline: ``ledger.LedgerEntry.usable``;
* which commit a run measured, the target branch, the merge-base: ``commitinfo``.
"""
