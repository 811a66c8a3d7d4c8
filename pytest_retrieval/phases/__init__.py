"""The steps of one pytest run, without pytest.

Modules:

* ``start``: from settings to a ready session: everything refused before the retriever runs;
  the settings a pytest run gives (``start``), the header line, the warning of an unsealed run
  outside CI.
* ``retrieve``: the run phase: the retriever run once per session (xdist shards,
  ``run.source.obtain``, the determinism probe), stopping a run with no meaningful numbers
  (``RunPhase.stop``), calling the retriever at the session's depth (``run_queries``).
* ``items``: declared gates as test items: which file collects each one, their JUnit
  properties, an outcome's properties and failure message.
* ``finish``: the end of a session: exit status, baseline update policy, report files, lines to
  print (``settle`` merges the xdist workers' payloads first; ``worker_payload``).

Decisions that live here:

* when a baseline may be written: ``finish``;
* which file collects a declared gate, its JUnit properties: ``items``.
"""
