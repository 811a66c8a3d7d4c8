"""Every file format, one way: readers and writers of what users hand us (formats -> golden).

Modules:

* ``golden_io``: the golden set's load and write dispatch (``load_golden``, ``write_golden``).
* ``golden_schema``: the canonical schema, records -> queries.
* ``golden_values``: one value (ids, grades, field names), each with its message and fix.
* ``golden_parsed``: what a reader produces (``Parsed``) and where each value was written
  (``Marks``).
* ``golden_files``: the YAML, JSON and JSONL golden sets.
* ``golden_csv``: the CSV golden set (a context as one JSON cell).
* ``golden_beir``: BEIR folders (corpus, queries, qrels).
* ``golden_trec``: TREC qrels with topics as a golden set.
* ``trec``: qrels and runs as trec_eval reads them; the ``qid docid`` forbidden-documents file.
* ``runs``: run files to gate (TREC and JSONL, with stages).
* ``corpus``: the one corpus reader (``read_corpus``) that every use of a corpus file goes
  through (the ids, the texts of duplicate groups, the worksheet's context columns); the
  stale-id check.
* ``docmap``: chunk -> document maps.
* ``worksheet``: the labelling worksheet: rows, CSV/JSONL/YAML, the corpus' context columns,
  a cell guarded against formula injection (``neutralise_cell``, ``restore_cell``).
* ``labels``: filling judgment holes: ``pool`` (runs -> worksheet rows), ``merge`` (graded
  rows -> a new golden set with provenance), provenance counts.

Decisions that live here:

* how a corpus file is read (ids, titles, texts): ``corpus.read_corpus``;
* a CSV worksheet cell against formula injection, and reading it back: ``worksheet``.
"""
