"""From a finished session or an artifact to what people read. Nothing is imported here: the
plugin loads each module only when it writes that report.

Modules:

* ``summary``: the summary every report shows: the table's columns and rows, the metrics a gate
  would refuse, latency percentiles, the depth facts and line; takes facts, never a session.
* ``artifact``: the JSON artifact: writer and reader; the leak facts every report shows
  (``leak_facts``).
* ``view``: what every renderer shows, built from the artifact.
* ``phrases``: numbers at fixed rounding, scope labels, one-line texts.
* ``gaterows``: one row per gate and regression check, the family and noise lines, the verdict
  of an artifact.
* ``terminal``: the lines the plugin prints at the end of a run.
* ``markdown``: the Markdown report (and the CI step summary).
* ``html``: the HTML page: head and policy, style, script, header, footer.
* ``html_tables``: the HTML tables: gates, per-query changes, queries.
* ``svg``: the inline charts.
* ``markup``: the escaping HTML builder.
* ``write``: ``REPORT_FILES`` (the one list of report files) and ``ReportTargets`` (where one
  run's reports go: from the settings, checked before the run, written at its end, or from the
  report command's flags).
* ``comment``: the pull-request comment's body: the marker that finds it again, the report cut
  under the provider's limit, the commit line.

Decisions that live here:

* which report files there are, and where one run's go: ``write`` (``REPORT_FILES``,
  ``ReportTargets``);
* which pull-request comment is the command's own: ``comment.carries`` (the marker; the author
  is ``cli.forges.ours``).
"""
