"""From flags and ini keys to one frozen ``Settings``: the ``OPTIONS`` table, the value parsers,
the resolution and the checks every pytest run makes (``preflight``).

Modules:

* ``options``: the ``OPTIONS`` table: every ini key and flag, one help text, default and parser
  each, and how pytest registers each (``addini_kwargs``, ``addoption_kwargs``); the
  statistics' defaults (``DEFAULT_ALPHA``, ``DEFAULT_CONFIDENCE``, ``DEFAULT_SEED``,
  ``DEFAULT_RESAMPLES``, ``DEFAULT_MULTIPLICITY``, ``DEFAULT_BUDGET_TEST``).
* ``values``: the parser of each kind of setting value (the text of a flag or ini key -> a
  typed value, or what was expected).
* ``resolve``: flags + ini values -> frozen ``Settings`` (precedence, paths, the checks across
  settings).
* ``preflight``: the checks of every pytest run, golden set or not (``refusal``): a
  ``--retrieval-* PATH`` flag that made pytest read another ini file, unknown ``retrieval_*``
  ini keys, a flag given while no golden set is configured.

Decisions that live here:

* a setting's flag, ini key, default, parser and help: its ``options.OPTIONS`` row;
* a setting pytest misread, a flag without a golden set: ``preflight.refusal``.
"""
