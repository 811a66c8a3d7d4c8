"""pytest entry point of pytest-retrieval (``pytest11: retrieval``).

The plugin loads in every pytest run of the environment it is installed in, so this module must
stay cheap to import: it imports nothing heavier than pytest itself. yaml, numpy and tabulate load
only when a test uses the plugin.
"""

from __future__ import annotations
