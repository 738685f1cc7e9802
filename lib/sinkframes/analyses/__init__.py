"""Chapter-level analyses: each turns models and sentences into tables a page can show."""
