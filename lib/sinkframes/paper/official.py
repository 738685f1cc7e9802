"""What the official notebooks printed: outputs of the authors' runs kept in their repository.

These are the numbers a faithful computation is compared with; the paper's own printed values
live in ``claims``.
"""

from __future__ import annotations

import pandas as pd

#: Results_sample/*/topology of the official repository (500 samples, max 48 tokens, fp32): per analysed
#: layer, mean (± population std) over samples; dim0/dim1 persistence with the number of samples that
#: had a finite bar; heads with consistency >= 0.3 and >= 0.5; the dominant top token.
RESULTS_SAMPLE_TOPOLOGY_COLUMNS = [
    "model", "layers", "heads", "layer", "betti0", "betti0_std", "betti1", "betti1_std", "attn_mean", "attn_max",
    "attn_std", "dim0_avg", "dim0_n", "dim0_max", "dim1_avg", "dim1_n", "dim1_max", "heads_cons_0.3", "heads_cons_0.5", "top_token",
]
_NA = float("nan")
RESULTS_SAMPLE_TOPOLOGY: list[tuple] = [
    ("meta-llama/llama-3.2-3B", 28, 24, 0, 26.41, 5.14, 0.00, 0.00, 0.0351, 1.0, 0.1222, 0.0574, 500, 0.1522, _NA, 0, _NA, 24, 24, "<|begin_of_text|>"),
    ("meta-llama/llama-3.2-3B", 28, 24, 7, 26.41, 5.14, 0.00, 0.00, 0.0351, 1.0, 0.1242, 0.0444, 500, 0.0848, _NA, 0, _NA, 24, 24, "<|begin_of_text|>"),
    ("meta-llama/llama-3.2-3B", 28, 24, 14, 26.41, 5.14, 0.00, 0.00, 0.0351, 1.0, 0.1186, 0.0880, 500, 0.1400, _NA, 0, _NA, 24, 24, "<|begin_of_text|>"),
    ("meta-llama/llama-3.2-3B", 28, 24, 21, 26.41, 5.14, 0.00, 0.00, 0.0351, 1.0, 0.1622, 0.0317, 500, 0.0637, _NA, 0, _NA, 24, 24, "<|begin_of_text|>"),
    ("meta-llama/llama-3.2-3B", 28, 24, 27, 26.41, 5.14, 0.00, 0.00, 0.0351, 1.0, 0.1333, 0.1620, 500, 0.2350, _NA, 0, _NA, 24, 24, "<|begin_of_text|>"),
    ("Qwen/Qwen2.5-7B", 28, 28, 0, 26.03, 5.55, 0.00, 0.00, 0.0362, 1.0, 0.0741, 0.2384, 500, 0.4993, _NA, 0, _NA, 7, 4, "The (12 heads); specialized heads on ','"),
    ("Qwen/Qwen2.5-7B", 28, 28, 7, 26.03, 5.55, 0.00, 0.00, 0.0362, 1.0, 0.1161, 0.0922, 500, 0.2707, _NA, 0, _NA, 0, 0, "sentence-initial word"),
    ("Qwen/Qwen2.5-7B", 28, 28, 14, 26.03, 5.55, 0.00, 0.00, 0.0362, 1.0, 0.1323, 0.0627, 500, 0.2556, _NA, 0, _NA, 0, 0, "sentence-initial word"),
    ("Qwen/Qwen2.5-7B", 28, 28, 21, 26.03, 5.55, 0.00, 0.00, 0.0362, 1.0, 0.1186, 0.0810, 500, 0.2750, _NA, 0, _NA, 0, 0, "sentence-initial word"),
    ("Qwen/Qwen2.5-7B", 28, 28, 27, 26.03, 5.55, 0.00, 0.00, 0.0362, 1.0, 0.1185, 0.2120, 500, 0.4135, _NA, 0, _NA, 0, 0, "sentence-initial word"),
    ("FacebookAI/xlm-roberta-large", 24, 16, 0, 22.69, 3.75, 20.93, 6.86, 0.0299, 0.1732, 0.0196, 0.0518, 500, 0.0922, 0.0039, 500, 0.0113, 14, 14, "<s> (11 heads)"),
    ("FacebookAI/xlm-roberta-large", 24, 16, 6, 2.29, 1.09, 5.54, 6.93, 0.0299, 0.7441, 0.0927, 0.0545, 443, 0.0620, 0.0173, 261, 0.0368, 16, 16, "."),
    ("FacebookAI/xlm-roberta-large", 24, 16, 12, 1.01, 0.12, 8.52, 9.42, 0.0299, 0.8139, 0.0948, 0.0025, 7, 0.0025, 0.0265, 279, 0.0452, 16, 16, "."),
    ("FacebookAI/xlm-roberta-large", 24, 16, 18, 1.00, 0.00, 0.00, 0.00, 0.0299, 0.6609, 0.0731, _NA, 0, _NA, _NA, 0, _NA, 16, 16, "</s> (consistency 0.986)"),
    ("FacebookAI/xlm-roberta-large", 24, 16, 23, 1.70, 1.06, 3.19, 5.03, 0.0299, 0.3552, 0.0600, 0.0155, 199, 0.0203, 0.0181, 235, 0.0345, 15, 14, ". (8) / </s> (6)"),
]


def results_sample_topology() -> pd.DataFrame:
    """The official Results_sample/ topology runs as a table (one row per model and analysed layer)."""
    return pd.DataFrame(RESULTS_SAMPLE_TOPOLOGY, columns=RESULTS_SAMPLE_TOPOLOGY_COLUMNS)
