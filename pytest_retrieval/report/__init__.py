"""From a finished session to what people read.

``payload`` (the xdist payload and merge), ``artifact`` (the JSON artifact: writer and reader),
``view`` (what every renderer shows, built from the artifact) with ``phrases`` (the shared
phrases) and ``gaterows`` (the gate rows and the verdict), ``terminal``, ``markdown``, ``html``
with ``html_tables``, ``svg`` and ``markup`` (the escaping builder), ``write`` (every report
file, used by the plugin and the console script alike), and ``comment`` (the Markdown report as
the body of a pull-request comment). Nothing is imported here: the plugin
loads each module only when it writes that report.
"""
