"""Gates: ``Selection``, the held-out ``Scope``, ``Score``, ``GateOutcome``, the ``assert_*_at``
helpers, the declared-gate grammar and gates file, a threshold's judgement and its explanation.
"""
