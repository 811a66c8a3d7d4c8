"""From flags and ini keys to one frozen ``Settings``: the ``OPTIONS`` table, the value parsers,
the resolution and the checks every pytest run makes (``preflight``).
"""
