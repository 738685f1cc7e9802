"""Metrics computed from attention tensors laid out ``[layer, head, query, key]``."""
