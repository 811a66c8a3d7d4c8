"""The labelled data, without a file format: ``Query``, ``GoldenSet``, their rules and the
leakage guard.

``pytest_retrieval.golden.load_golden`` is a documented old path: it is resolved on first use
from ``formats.golden_io`` (the loader lives with the formats, which sit above this package).
"""
