"""The page API the templates import: ``page.setup`` (parameters checked, sentences drawn, provenance shown),
``params`` (the parameters cell and its checks) and ``figure_caption``. The build that executes the pages is the
repository's ``sinkframes_build`` package, which the installed library does not hold."""
