"""The book: page setup for templates, the manifest of pages, the batch build and the command line."""
