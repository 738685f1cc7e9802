"""A synthetic task that asks attention to do nothing most of the time: the trigger-conditional mean.

Every sequence starts with a fixed, content-free token (``BOS``). After it, each position has a
type (a *trigger*, a *marked* token or a *filler*) and a random content vector. The target at a
trigger is the mean content of the marked tokens the position can see (the earlier ones in a causal
decoder, every other one in a bidirectional encoder), zero when there are none; the target
everywhere else is zero.

Why it needs a place to put attention: a head that gathers the marked contents for a trigger must
return nothing at every other query. Every token but BOS carries random content through the same
value projection that carries the marked contents, so attending to any of them adds noise; BOS is
the one key with nothing on it that every query sees. Under softmax the weights sum to one, so
"nothing" means putting the weight on BOS. A head whose weights need not sum to one (sigmoid
attention) or whose output can be switched off (an output gate) has another way to do nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

BOS, TRIGGER, MARKED, FILLER = 0, 1, 2, 3
VOCAB_SIZE = 4


@dataclass(frozen=True)
class SinkTask:
    """The task's constants (a change here changes every run)."""

    content_dim: int = 8
    length: int = 32
    p_trigger: float = 0.15
    p_marked: float = 0.25

    @property
    def vocab_size(self) -> int:
        return VOCAB_SIZE

    def sample(self, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids [batch, length], content [batch, length, content_dim])``: BOS with zero content, then
        types drawn independently, each with Gaussian content of unit expected squared norm."""
        u = torch.rand(batch, self.length - 1, generator=generator, device="cpu")  # drawn on the host
        body = torch.where(u < self.p_trigger, TRIGGER, torch.where(u < self.p_trigger + self.p_marked, MARKED, FILLER))
        ids = torch.cat([torch.full((batch, 1), BOS, device="cpu"), body], 1)
        content = torch.randn(batch, self.length, self.content_dim, generator=generator, device="cpu")
        content = content / self.content_dim**0.5
        content[:, 0] = 0.0
        return ids, content

    def targets(self, ids: torch.Tensor, content: torch.Tensor, causal: bool) -> torch.Tensor:
        """``[batch, length, content_dim]``: at triggers, the mean content of the visible marked tokens."""
        n = ids.shape[1]
        is_marked = (ids == MARKED).float()  # [batch, length]
        ones = torch.ones(n, n, device=ids.device)
        sees = torch.tril(ones, diagonal=-1) if causal else ones - torch.eye(n, device=ids.device)  # [query, key]
        total = torch.einsum("qk,bk,bkd->bqd", sees, is_marked, content)
        count = torch.einsum("qk,bk->bq", sees, is_marked).unsqueeze(-1)  # [batch, length, 1]
        return total / count.clamp(min=1.0) * (ids == TRIGGER).unsqueeze(-1).float()

    def loss(self, prediction: torch.Tensor, ids: torch.Tensor, content: torch.Tensor, causal: bool
             ) -> torch.Tensor:
        """Mean squared error summed over the content dimensions, averaged over positions 1..n-1."""
        err = (prediction - self.targets(ids, content, causal))[:, 1:]  # [batch, length-1, content_dim]
        return err.pow(2).sum(-1).mean()

    def zero_loss(self, ids: torch.Tensor, content: torch.Tensor, causal: bool) -> float:
        """The loss of the constant prediction 0 (what a model that never reads the marked contents gets)."""
        return float(self.targets(ids, content, causal)[:, 1:].pow(2).sum(-1).mean())


#: the task every run of the grid trains on
TASK = SinkTask()
