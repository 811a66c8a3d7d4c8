"""Numbers from rankings and judgments: the metric table and kernels, batch evaluation and its
conventions, abstention, duplicate groups, and the statistics (``stats``).

The bottom of the house above the foundation: nothing here reads a file format, a setting or a
session.
"""
