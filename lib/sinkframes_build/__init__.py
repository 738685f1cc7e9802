"""The book's build: executing the pages with papermill, the page cache, the start order and preparation, the
HTML and its checks, the stand-in hub of the rehearsals. It runs from a clone of the repository and is left out of
the installed package, which holds the science and the page API (``sinkframes.book``)."""
