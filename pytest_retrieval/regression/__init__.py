"""Regressions against a baseline: the per-query snapshot, the baseline file, re-scoring, the
regression rule in steps (pairs, family, outcome, rule), the run ledger, its history, and which
commit a run measured (``commitinfo``).
"""
