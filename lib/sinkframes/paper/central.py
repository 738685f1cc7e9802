"""The paper's central claims, grouped into the lines the scorecard's answer gives: the headline of the book.

The verdict layer reads them as the headline claims (``verdicts.draws``); the scorecard and the answer grid write
one line each.
"""

from __future__ import annotations

#: the paper's central claims, and the later accounts the book weighs them against, in the order the box lists
#: them: (line, the claims whose verdicts fill it)
CENTRAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The frame type follows the family the paper assigns (Sec. 3.1)",
     ("3.1.centralized", "3.1.distributed", "3.1.bidirectional")),
    ("Beginning-of-sequence tokens receive 30-40 % of the attention (Sec. 1)", ("1.bos_share",)),
    ("Centralized frames make star-like threshold graphs (Sec. 5.1)", ("5.1.star",)),
    ("Removing the sink lowers the KL in every region of a centralized model (Sec. 5.1)", ("5.1.kl_negative",)),
    ("Fisher information sits in the early layers of a centralized model (Sec. 5.1)", ("5.1.fisher_early",)),
    ("Removing the sink harms the model more than removing another key (Sec. 1)", ("1.removal_hurts",)),
    ("Reference frames emerge early in training (App. B)", ("B.early_emergence",)),
    ("... in tiny models trained on a task that needs a sink: no later than the loss drops (App. B)",
     ("B.early_emergence.trained",)),
    ("... and in small language models trained on natural text (App. B)", ("B.early_emergence.text",)),
    ("Changing the position encoding at fixed weights changes the frame (Sec. 3.4)", ("3.4.encoding_decides",)),
    ("Training alike with another position encoding gives another frame (Sec. 3.4)",
     ("3.4.encoding_decides.trained",)),
    ("... and in small language models trained alike on natural text (Sec. 3.4)", ("3.4.encoding_decides.text",)),
    ("... and scaled RoPE lowers the first-token share of models trained alike (Sec. 3.4)",
     ("3.4.scaled_rope_bias.trained",)),
    ("... and whether a sink forms at all in small language models trained alike on natural text (Sec. 3.4; "
     "Gu et al. find one under every encoding at larger scale)", ("3.4.sink_forms.text",)),
    ("The sink follows position 0 of the rotary code (Sec. 3.3-3.4)", ("3.4.rope_origin",)),
    ("... or the first physical token (arXiv 2509.21042)", ("later.first_physical",)),
)
#: every central claim's id, in the box's order (the claims of :data:`CENTRAL`, line after line)
CENTRAL_IDS: tuple[str, ...] = tuple(cid for _, ids in CENTRAL for cid in ids)
