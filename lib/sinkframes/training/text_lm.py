"""A small language model on natural text whose position encoding is a switch.

Appendix B's byte-level run (:mod:`sinkframes.training.emergence`) never forms a first-token sink in
its 36 CPU-minutes. This module is the search for a recipe that does, and the position-encoding grid
at that recipe:

- text: the same Python 3.11 documentation sources (same split: every 20th file held out);
- tokens: a byte-level BPE vocabulary trained on the training text with ``tokenizers``
  (:func:`train_tokenizer`), or raw bytes when ``vocab`` is 0; every window is one fixed BOS token
  followed by ``seq_len - 1`` tokens at a seeded offset;
- model: :class:`TinyLM`, the blocks of :mod:`sinkframes.training.tiny` (pre-norm, RMSNorm, GELU
  MLP, every position encoding of :data:`~sinkframes.training.tiny.POSITIONS`) with a token
  embedding tied to the read-out;
- optimisation: AdamW (betas 0.9/0.95, weight decay on matrices), linear warm-up then cosine decay
  to 10 %, gradient clipping at 1.0, one thread, deterministic algorithms.

While it trains, a run measures the first-token share of every layer on fixed held-out windows
(:func:`probe_shares`) so that a recipe's sink, or its absence, is seen without saving weights. A run given a
checkpoint file saves its whole state there at every probe (weights, optimizer, schedule, the batch generator,
its CPU and wall seconds) and, started again, continues from it: a run longer than one sitting is made in
pieces, and the pieces give the weights one uninterrupted run gives on the same software and CPU.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .reproducible import cpu_seconds, deterministic_threads, warmup_cosine
from .tiny import Block, RMSNorm, TinyConfig, rope_angles

BOS = "<s>"
PROBE_SEED = 12345
PROBE_WINDOWS = 32
#: where the scouting runs' probe records are kept (one JSON object per line)
SCOUT_LOG = Path(__file__).resolve().parents[1] / "data" / "text_lm" / "scouts.jsonl"
#: where the position-encoding grid's probe records are kept
GRID_LOG = SCOUT_LOG.with_name("grid.jsonl")
#: the training texts a recipe can name: the held-out windows are always the Python documentation's
TEXTS = ("python", "python+kernel")


@dataclass(frozen=True)
class LMRecipe:
    """Everything that decides a run's weights (text and tokenizer aside)."""

    name: str
    vocab: int = 4096  # BPE vocabulary size; 0 = bytes
    d_model: int = 64
    n_layers: int = 4
    n_heads: int = 4
    d_mlp: int = 256
    seq_len: int = 128
    batch_size: int = 32
    steps: int = 4000
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    position: str = "rope"
    seed: int = 0
    #: the training text: the Python documentation, or with the kernel's documentation added (:data:`TEXTS`)
    text: str = "python"
    #: the batch generator's seed (``None``: ``seed + 1000``), so that runs of several weight seeds can share one
    #: data order
    data_seed: int | None = None
    #: the run ends at this step (``None``: at ``steps``), its learning-rate schedule still planned over ``steps``
    stop_at: int | None = None

    def __post_init__(self) -> None:
        if self.text not in TEXTS:
            raise ValueError(f"unknown text {self.text!r}; choose from {TEXTS}")
        if self.stop_at is not None and not 0 < self.stop_at <= self.steps:
            raise ValueError(f"stop_at {self.stop_at} must lie in 1..steps ({self.steps})")

    @property
    def batch_seed(self) -> int:
        return self.seed + 1000 if self.data_seed is None else self.data_seed

    @property
    def last_step(self) -> int:
        return self.steps if self.stop_at is None else self.stop_at

    def config(self, vocab_size: int) -> TinyConfig:
        return TinyConfig(vocab_size, 0, position=self.position, attention="softmax", causal=True,
                          d_model=self.d_model, n_heads=self.n_heads, n_layers=self.n_layers, d_mlp=self.d_mlp,
                          max_len=self.seq_len)

    def with_(self, **changes: Any) -> LMRecipe:
        return replace(self, **changes)


# ----------------------------------------------------------------------------------------- tokens
def train_tokenizer(texts: Sequence[str], vocab: int) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` of ``vocab`` entries trained on ``texts``; id 0 is BOS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[BOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def encode(texts: Sequence[str], tokenizer: Any | None) -> np.ndarray:
    """One token stream of ``texts`` (bytes when ``tokenizer`` is None, then BOS is id 256)."""
    if tokenizer is None:
        return np.concatenate([np.frombuffer(t.encode("utf-8"), dtype=np.uint8) for t in texts]).astype(np.int32)
    return np.concatenate([np.asarray(e.ids, dtype=np.int32) for e in tokenizer.encode_batch(list(texts))])


def windows(stream: np.ndarray, gen: torch.Generator, n: int, seq_len: int, bos: int) -> torch.Tensor:
    """``n`` windows ``[n, seq_len]``: BOS, then ``seq_len - 1`` tokens from a seeded offset."""
    starts = torch.randint(0, len(stream) - seq_len, (n,), generator=gen, device="cpu")  # [n]
    body = torch.from_numpy(np.stack([stream[s : s + seq_len - 1] for s in starts.tolist()]).astype(np.int64))
    return torch.cat([torch.full((n, 1), bos, dtype=torch.long, device="cpu"), body], 1)  # [n, seq_len], on the host


# ----------------------------------------------------------------------------------------- model
class TinyLM(nn.Module):
    """``forward(ids) -> (logits [batch, position, vocab], attention [batch, layer, head, query, key])``."""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model)
        self.table = nn.Embedding(cfg.max_len, cfg.d_model) if cfg.position == "learned" else None
        if self.table is not None:
            nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = ids.shape[1]
        x = self.embed(ids)  # [batch, position, d_model]
        if self.table is not None:
            x = x + self.table.weight[:n]
        angles = rope_angles(self.cfg, n, x.device)
        weights = []
        for block in self.blocks:
            x, w = block(x, angles, None)
            weights.append(w)
        return self.norm(x) @ self.embed.weight.T, torch.stack(weights, 1)


def lm_loss(model: TinyLM, ids: torch.Tensor) -> torch.Tensor:
    logits, _ = model(ids)
    return nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


#: what a run may measure besides :func:`probe_shares` at each probe: attention ``[batch, layer, head, query,
#: key]`` -> JSON-able fields (the controlled grid's frame label and intervals, which live in the analyses)
ProbeExtra = Callable[[torch.Tensor], dict[str, Any]]


@torch.no_grad()
def probe_shares(model: TinyLM, ids: torch.Tensor, extra: ProbeExtra | None = None) -> dict[str, Any]:
    """Held-out loss and, per layer, the first-token share (mean over heads and queries 1..n-1), the
    largest single head's share, and every head's share (``head_share``: ``[layer][head]``); then the fields
    ``extra`` computes from the same attention."""
    model.eval()
    logits, w = model(ids)  # w [batch, layer, head, query, key]
    loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    model.train()
    first = w[:, :, :, 1:, 0].mean((0, 3))  # [layer, head]
    out = {"loss": round(float(loss), 4), "first_share": [round(float(v), 4) for v in first.mean(1)],
           "best_head": [round(float(v), 4) for v in first.max(1).values],
           "head_share": [[round(float(v), 4) for v in layer] for layer in first]}
    return out if extra is None else {**out, **extra(w)}



def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory instead of returning it to the system after each step.

    A step allocates and frees the ``[batch, position, vocab]`` logits (tens of MB); by default glibc
    maps and unmaps such blocks every time, and the page faults cost as much as the arithmetic (half
    of a step's time on the machine the runs were made on). The weights do not depend on this."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):  # not glibc
        return
    m_trim_threshold, m_top_pad, m_mmap_max = -1, -2, -4
    libc.mallopt(m_mmap_max, 0)  # every block from the heap, none mapped on its own
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_top_pad, 1 << 28)


def train_lm(recipe: LMRecipe, train: np.ndarray, held: np.ndarray, vocab_size: int, bos: int,
             probe_every: int = 250, log: Path | None = None,
             progress: Callable[[str], None] | None = print, checkpoint: Path | None = None,
             stop_after_s: float | None = None,
             extra: ProbeExtra | None = None) -> tuple[TinyLM, list[dict[str, Any]]]:
    """Train ``recipe`` on the token streams; returns the model and the probe record every ``probe_every`` steps.

    ``checkpoint``: a file the run's state is saved to at every probe, and continued from if it exists (the
    records returned and logged are then the new ones; see :func:`resume_state`). ``stop_after_s``: stop at the
    first probe after this many wall seconds of this call (the state saved there), for a run made in pieces.
    ``extra``: more to measure at each probe (:data:`ProbeExtra`)."""
    keep_freed_memory()
    with deterministic_threads(1):
        return _train(recipe, train, held, vocab_size, bos, probe_every, log, progress, checkpoint, stop_after_s,
                      extra)


def _save_state(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` whole or not at all (a run stopped while saving keeps its previous state)."""
    import io

    from ..cache import atomic_write_bytes

    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())


def resume_state(path: Path, recipe: LMRecipe) -> dict[str, Any] | None:
    """The state saved at ``path`` for ``recipe`` (``None`` when there is none); raises ``ValueError`` when the
    file holds another recipe's run, so that a run never continues from a state it did not make."""
    if not path.exists():
        return None
    state: dict[str, Any] = torch.load(path, weights_only=True)
    if state.get("recipe") != recipe_dict(recipe):
        raise ValueError(f"{path} holds a run of {state.get('recipe')}, not of {recipe_dict(recipe)}; move it away "
                         "or start afresh (scout-text-lm --fresh)")
    return state


def _log(log: Path | None, line: dict[str, Any]) -> None:
    if log is not None:
        with log.open("a") as fh:
            fh.write(json.dumps(line) + "\n")


def _train(recipe: LMRecipe, train: np.ndarray, held: np.ndarray, vocab_size: int, bos: int, probe_every: int,
           log: Path | None, progress: Callable[[str], None] | None, checkpoint: Path | None = None,
           stop_after_s: float | None = None,
           extra: ProbeExtra | None = None) -> tuple[TinyLM, list[dict[str, Any]]]:
    torch.manual_seed(recipe.seed)
    model = TinyLM(recipe.config(vocab_size))
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=recipe.lr, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, recipe.warmup, recipe.steps))
    gen = torch.Generator().manual_seed(recipe.batch_seed)
    probe_ids = windows(held, torch.Generator().manual_seed(PROBE_SEED), PROBE_WINDOWS, recipe.seq_len, bos)
    records: list[dict[str, Any]] = []
    first, wall0, cpu_before = 0, 0.0, 0.0
    saved = resume_state(checkpoint, recipe) if checkpoint is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        sched.load_state_dict(saved["schedule"])
        gen.set_state(saved["generator"])
        first, wall0, cpu_before = int(saved["step"]), float(saved["wall"]), float(saved["cpu"])
        again = probe_shares(model, probe_ids, extra)
        same = all(again.get(k) == saved["record"][k] for k in saved["record"])  # older states hold fewer fields
        _log(log, {"recipe": recipe.name, "resumed_at": first, "probe_reproduced": same, "torch": torch.__version__})
        if progress:
            progress(f"{recipe.name}: continued from step {first} ({checkpoint}); its probe "
                     f"{'reproduced exactly' if same else 'differs from the saved one (other software or CPU)'}")
    start, cpu0 = time.perf_counter(), cpu_seconds()
    last = recipe.last_step
    for step in range(first, last + 1):
        if (step % probe_every == 0 or step == last) and not (saved is not None and step == first):
            rec = {"step": step, **probe_shares(model, probe_ids, extra),
                   "wall": round(wall0 + time.perf_counter() - start, 1),
                   "cpu": round(cpu_before + cpu_seconds() - cpu0, 1)}
            records.append(rec)
            _log(log, {"recipe": recipe.name, **rec})
            if progress:
                progress(f"{recipe.name} step {step}: loss {rec['loss']:.3f} first {rec['first_share']} "
                         f"best head {rec['best_head']} {rec['wall']:.0f} s")
            if checkpoint is not None:
                _save_state(checkpoint, {"recipe": recipe_dict(recipe), "step": step, "model": model.state_dict(),
                                         "optimizer": opt.state_dict(), "schedule": sched.state_dict(),
                                         "generator": gen.get_state(), "wall": rec["wall"], "cpu": rec["cpu"],
                                         "record": {k: v for k, v in rec.items() if k not in ("step", "wall", "cpu")}})
            if stop_after_s is not None and step < last and time.perf_counter() - start >= stop_after_s:
                if progress:
                    progress(f"{recipe.name}: stopped at step {step} of {last}; its state is in {checkpoint}")
                break
        if step == last:
            break
        loss = lm_loss(model, windows(train, gen, recipe.batch_size, recipe.seq_len, bos))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        sched.step()
    return model, records


#: fields a recipe's record leaves out at their default, so that logs and saved states written before the
#: field existed still match their recipes
_OMITTED_AT_DEFAULT = {"text": "python", "data_seed": None, "stop_at": None}


def recipe_dict(recipe: LMRecipe) -> dict[str, Any]:
    """The recipe's fields, less those of :data:`_OMITTED_AT_DEFAULT` that hold their default."""
    fields = asdict(recipe)
    for key, default in _OMITTED_AT_DEFAULT.items():
        if fields[key] == default:
            del fields[key]
    return fields


BASE = LMRecipe("base")
#: the recipes tried in the search for one that forms a first-token sink (each a change from ``base``)
SCOUTS: dict[str, LMRecipe] = {r.name: r for r in (
    BASE,
    BASE.with_(name="wd0.5", weight_decay=0.5),
    BASE.with_(name="hot", lr=1e-2, weight_decay=0.5),
    BASE.with_(name="bytes-deep", vocab=0, n_layers=6, steps=8000),
    BASE.with_(name="bytes-heads8", vocab=0, n_layers=6, n_heads=8, steps=4000),  # head width 8
    BASE.with_(name="bytes-heads2", vocab=0, n_layers=6, n_heads=2, steps=4000),  # head width 32
    # deeper, 8 narrow heads and twice the window (the same tokens per step)
    BASE.with_(name="bytes-long", vocab=0, n_layers=8, n_heads=8, seq_len=256, batch_size=16, steps=4000),
    # the only recipe whose shares still rose at its end (base): the same, with three times the steps
    BASE.with_(name="base-12k", steps=12000),
    # depth, and depth with a longer window: deeper models and longer contexts mix their tokens more, and
    # the sink is the way a head avoids mixing (Barbero et al. 2025); the base's sinks were in 2 of 4 layers
    BASE.with_(name="deep8", n_layers=8, steps=6000),
    BASE.with_(name="deep8-long", n_layers=8, seq_len=256, batch_size=16, steps=5000),  # same tokens per step
    # base-12k's shares rose roughly linearly to its stop (0.118 at step 7500 of 12,000): the base recipe with
    # four times its steps, whose cosine decay is slower (at step 8000 its rate is 0.94 of the peak, against
    # base-12k's 0.33), made in pieces from its saved state
    BASE.with_(name="base-48k", steps=48000),
    # weight decay was the strongest lever on the sink in Gu et al.'s controlled pre-training (ICLR 2025: 0.5 gave
    # 41 % of heads against 18 % at 0.1); wd0.5 was stopped at step 1250, before base's shares began to rise
    BASE.with_(name="wd0.5-48k", steps=48000, weight_decay=0.5),
    # Gu et al.'s other lever: more unique data (fewer training tokens gave fewer sink heads at the same steps);
    # the kernel's documentation added to the training text, about three times the tokens (held-out text unchanged)
    BASE.with_(name="kernel-48k", steps=48000, text="python+kernel"),
    # kernel-48k's shares rose several times faster than base-48k's at equal steps (0.21 against 0.07 at step
    # 3000): the same text in the search's budget of about 45 CPU-minutes (8,000 steps, its cosine decay to match)
    BASE.with_(name="kernel-8k", steps=8000, text="python+kernel"),
    # wd0.5-48k's first layer crossed 0.5 at step 5250 (34 CPU-minutes): weight decay 0.5 in the 45-minute
    # budget, its cosine decay over 8,000 steps
    BASE.with_(name="wd0.5-8k", steps=8000, weight_decay=0.5),
)}


#: the position-encoding grid: the recipe of the search that formed a sink soonest (wd0.5-48k: layer 0 above 0.5 at
#: step 5250), every run stopped at step 8000 (its schedule barely decayed: 0.94 of the peak rate), one data order
#: for every run; the cells differ only in the position encoding, and two weight seeds each
GRID_BASE = SCOUTS["wd0.5-48k"].with_(stop_at=8000, data_seed=1000)
GRID_POSITIONS = ("rope", "nope", "rope_1e6", "partial_0.25", "learned", "rope_ntk4", "partial_0.5")
GRID_SEEDS = (0, 1)


def grid_name(position: str, seed: int) -> str:
    return f"grid-{position}-s{seed}"


#: the grid's runs, seed by seed (a session that trains part of it gives every encoding of seed 0 first)
GRID: dict[str, LMRecipe] = {
    grid_name(p, s): GRID_BASE.with_(name=grid_name(p, s), position=p, seed=s)
    for s in GRID_SEEDS for p in GRID_POSITIONS}


#: the formation test: does a sink form by step 8000 more often under the rotary encoding than without one? Three
#: cells of the grid (standard RoPE; no position encoding; the learned table) at five weight seeds each: seeds 0 and 1
#: are the grid's own runs, seeds 2-4 are new runs of the same recipe, data order and probes (only the seed differs),
#: logged to their own log
FORMATION_POSITIONS = ("rope", "nope", "learned")
FORMATION_SEEDS = (0, 1, 2, 3, 4)
FORMATION_LOG = SCOUT_LOG.with_name("formation.jsonl")
#: the formation test's new runs, seed by seed (every encoding of a seed before the next seed)
FORMATION: dict[str, LMRecipe] = {
    grid_name(p, s): GRID_BASE.with_(name=grid_name(p, s), position=p, seed=s)
    for s in FORMATION_SEEDS if s not in GRID_SEEDS for p in FORMATION_POSITIONS}
#: sooner or never: one run of each of the three cells continued to step 24,000 (the same schedule, planned over
#: the grid's 48,000 steps, so its first 8,000 steps are the grid run's); standard RoPE at seed 1, the rotary run
#: that had formed no sink by step 8000, and the two non-rotary cells at seed 0
LONG_STOP = 24000
LONG: dict[str, LMRecipe] = {
    f"long-{p}-s{s}": GRID_BASE.with_(name=f"long-{p}-s{s}", position=p, seed=s, stop_at=LONG_STOP)
    for p, s in (("nope", 0), ("learned", 0), ("rope", 1))}


def token_streams(docs: Sequence[tuple[str, str]], vocab: int, holdout_every: int = 20,
                  extra: Sequence[tuple[str, str]] = ()) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(training stream, held-out stream, vocabulary size, BOS id)`` of the documents (every
    ``holdout_every``-th held out), tokenized by a BPE of ``vocab`` entries trained on the training part
    (bytes when ``vocab`` is 0). ``extra`` documents are added to the training part only, so that the held-out
    windows stay those of ``docs``."""
    train = [t for i, (_, t) in enumerate(docs) if i % holdout_every != holdout_every - 1] + [t for _, t in extra]
    held = [t for i, (_, t) in enumerate(docs) if i % holdout_every == holdout_every - 1]
    if not vocab:
        return encode(train, None), encode(held, None), 257, 256
    tok = train_tokenizer(train, vocab)
    return encode(train, tok), encode(held, tok), tok.get_vocab_size(), tok.token_to_id(BOS)


def scout(recipe: LMRecipe, docs: Sequence[tuple[str, str]], log: Path = SCOUT_LOG,
          progress: Callable[[str], None] | None = print, checkpoint: Path | None = None,
          stop_after_s: float | None = None, kernel: Sequence[tuple[str, str]] = (),
          extra: ProbeExtra | None = None) -> list[dict[str, Any]]:
    """Train ``recipe`` and append its probe records (every 250 steps) to ``log``: the search for a recipe
    that forms a sink keeps its failures as well as its successes. Weights are kept only in ``checkpoint``
    (continued from when it exists; the header line is written when the run starts from step 0). ``kernel``: the
    kernel's documents, needed by a recipe whose text is ``python+kernel``; ``extra``: more to measure at each
    probe."""
    if recipe.text == "python+kernel" and not kernel:
        raise ValueError(f"{recipe.name} trains on the kernel documentation as well: pass its documents")
    added = kernel if recipe.text == "python+kernel" else ()
    train, held, vocab_size, bos = token_streams(docs, recipe.vocab, extra=added)
    log.parent.mkdir(parents=True, exist_ok=True)
    if checkpoint is None or not checkpoint.exists():  # a state there is checked by train_lm before any probe
        _log(log, {"recipe": recipe.name, "config": recipe_dict(recipe), "train_tokens": int(train.size),
                   "torch": torch.__version__})
    _, records = train_lm(recipe, train, held, vocab_size, bos, log=log, progress=progress, checkpoint=checkpoint,
                          stop_after_s=stop_after_s, extra=extra)
    return records


def load_scouts(log: Path = SCOUT_LOG) -> tuple[dict[str, dict[str, Any]], Any]:
    """The scouting log: ``({recipe: its header (config, training tokens, torch, and ``resumes``: the lines of
    the points where the run was continued from its checkpoint)}, records)``, the records a table with one row
    per probe and layer (``recipe, step, cpu, loss, layer, first_share, best_head, head_share``; ``head_share``,
    the layer's per-head shares, is ``None`` on probes logged before it was measured)."""
    import pandas as pd

    heads: dict[str, dict[str, Any]] = {}
    rows = []
    for line in Path(log).read_text().splitlines():
        rec = json.loads(line)
        if "config" in rec:
            heads[rec["recipe"]] = {**rec, "resumes": []}
            continue
        if "resumed_at" in rec:
            heads[rec["recipe"]]["resumes"].append(rec)
            continue
        per_head = rec.get("head_share") or [None] * len(rec["first_share"])
        for layer, (share, best, heads_) in enumerate(zip(rec["first_share"], rec["best_head"], per_head,
                                                          strict=True)):
            rows.append({"recipe": rec["recipe"], "step": rec["step"], "cpu": rec["cpu"], "loss": rec["loss"],
                         "layer": layer, "first_share": share, "best_head": best, "head_share": heads_})
    return heads, pd.DataFrame(rows)


def changes_from_base(config: dict[str, Any], base: LMRecipe = BASE) -> str:
    """What a recipe changes from ``base``, in words (``lr 0.01, weight decay 0.5``); ``"none"`` for the base."""
    words = {"lr": "lr", "weight_decay": "weight decay", "vocab": "vocabulary", "d_model": "width",
             "n_layers": "layers", "n_heads": "heads", "d_mlp": "MLP width", "seq_len": "window",
             "batch_size": "batch", "steps": "steps", "position": "position encoding", "warmup": "warm-up",
             "text": "text"}
    ref = recipe_dict(base)
    diffs = [f"{words.get(k, k)} {v:g}" if isinstance(v, float) else f"{words.get(k, k)} {v}"
             for k, v in config.items() if k not in ("name", "seed") and ref.get(k) != v]
    return ", ".join(diffs) or "none (the base recipe)"
