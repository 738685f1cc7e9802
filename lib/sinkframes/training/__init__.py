"""Training the small model whose checkpoints show when a sink forms (Appendix B, offline profile)."""
