"""From a finished session to what people read.

``payload`` (the xdist payload and merge), ``artifact`` (the JSON artifact: writer and reader),
``view`` (what every renderer shows, built from the artifact; shared phrases), ``terminal``,
``markdown``, ``html`` with ``svg`` and ``markup`` (the escaping builder), and ``write`` (every
report file, used by the plugin and the console script alike). Nothing is imported here: the
plugin loads each module only when it writes that report.
"""
