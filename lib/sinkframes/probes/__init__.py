"""Probes: computations that must run the model beyond reading attention.

``fisher`` (squared gradient norms of the language-model loss per layer and parameter group) and
``sink_removal`` (removing a key from every attention row inside the forward pass, and what that
does to the model's outputs).
"""
