"""Numbers from rankings and judgments: the metric table and kernels, batch evaluation and its
conventions, abstention, duplicate groups, and the statistics (``stats``).

The bottom of the house above the foundation: nothing here reads a file format, a setting or a
session.

Modules:

* ``metrics``: the per-query metric kernels (the seed's formulas); the metric table
  (``METRICS``: each metric's name, aliases, trec_eval spelling, cutoff rule, direction,
  source, whether the summary shows it by default, in table order; the valid-metrics text, the
  summary's default metrics and the aliases' parser derive from it) and ``MetricSpec``, one
  spelling per metric.
* ``evaluate``: batch scoring, a run x judgments -> ``Evaluation``; ``Conventions`` (every
  convention that changes a number, in one value, built once per scoring path); the
  zero-relevant and ``min_grade`` conventions; what K counts (``measured_unit``) and which
  documents (at which rank) a cutoff reaches in it (``ranked_within``).
* ``abstention``: no-answer queries: ``abstain_rate`` / ``answer_rate`` per query (their
  domains, the score floor, "cannot be measured"), the sweep of candidate floors.
* ``dedup``: duplicate groups (``DuplicateGroups``: from a file, ``exact``, ``near`` with
  MinHash), the per-group scoring convention (``collapse``), ``distinct@K``.
* ``stats/``: the statistics (numpy, imported lazily): intervals, the paired sign-flip test,
  the detectable drop, family-wise control (``multiplicity``).

Decisions that live here:

* what a metric is (names, aliases, cutoff rule, order, direction): ``metrics.METRICS``;
* the conventions a number is scored with (gain, ``min_grade``, ``no_relevant``, unjudged,
  duplicate groups, the score floor per stage, repeated ids, what K counts):
  ``evaluate.Conventions``, built once per path (``Conventions.from_settings`` for a pytest
  run, its extra runs and rescore; ``Conventions.from_recorded`` for a stored run; the console
  script's flags in ``cli.evaluate``) and carried by every ``Evaluation``; which score floor a
  stage has: ``Conventions.floor_for``;
* a repeated id in a ranking, what K counts (``retrieval_cutoff_unit``), how long a ranking
  must be for a metric at K, which documents K reaches (what ``forbidden@K`` counts and the
  leak finder names): ``evaluate`` (``evaluate_documents``, ``measured_unit``,
  ``ranked_within``);
* relevance per duplicate group, ``distinct@K``, which groups a recorded ``dedup`` setting
  stands for: ``dedup`` (``recorded_groups``);
* when a ranking answers, the abstention domains: ``abstention``;
* which checks form a family and their adjusted p-values: ``stats.multiplicity.adjust_family``
  computes them (``regression.family`` decides which checks).
"""
