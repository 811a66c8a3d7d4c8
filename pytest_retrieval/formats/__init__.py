"""Readers and writers for the file formats pytest-retrieval understands.

``formats.trec`` reads TREC qrels and run files the way trec_eval does; the golden-set formats
(YAML, JSON, JSONL, CSV, TREC qrels with topics, BEIR folders) live beside it.
"""
