"""The session of one pytest run, without pytest: ``RetrievalSession`` (the run, the scores,
the gate records, the verdict), the run checks applied to it (``findings``), this run against
the baseline and the ledger, and the xdist payload a worker sends.
"""
