"""The steps of one pytest run, without pytest: ``start`` (settings to a ready session),
``retrieve`` (the run phase), ``items`` (declared gates as test items) and ``finish`` (the
exit status, the baseline update, the reports, the lines to print).
"""
