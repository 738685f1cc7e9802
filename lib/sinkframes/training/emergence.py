"""Grow a checkpoint series offline: a small Llama-architecture language model trained from scratch.

Appendix B of the paper watches attention across Pythia's training checkpoints. No public
checkpoint series installs without the hub, so this module trains one, seeded and on two CPU
threads, and saves checkpoints on a log scale of steps:

- text: the reStructuredText sources of the Python 3.11 documentation, from the Debian package
  ``python3.11-doc`` (version pinned in :data:`DOC_PACKAGE`), fetched with ``apt-get download``
  (no root needed) and unpacked with ``dpkg-deb``; the concatenated text's sha256 is recorded.
- tokens: bytes (ids 0-255) plus one fixed BOS token (id 256) at the start of every window, so a
  first-token sink has a token that carries no content to form on.
- model: ``LlamaForCausalLM`` (RoPE, RMSNorm, SwiGLU) with :data:`MODEL_CONFIG`.
- optimisation: AdamW, linear warm-up then cosine decay, batches drawn by a seeded generator;
  ``torch.use_deterministic_algorithms`` and a fixed thread count make a rerun on the same machine
  reproduce the weights bit-for-bit.

Each checkpoint is a self-contained Hugging Face folder (``config.json``, ``model.safetensors`` in
float16, a byte-level ``tokenizer.json``), so the library loads it like any local model.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .reproducible import cpu_seconds, deterministic_threads, warmup_cosine

DOC_PACKAGE = "python3.11-doc=3.11.2-6+deb12u8"
DOC_SOURCES = "usr/share/doc/python3.11/html/_sources"
CHECKPOINT_DIR = Path(__file__).resolve().parents[1] / "data" / "emergence"
#: how the page names the shipped run
RUN_NAME = "llama-6x64 (trained here)"
BOS_ID = 256
VOCAB_SIZE = 257

MODEL_CONFIG: dict[str, Any] = {
    "vocab_size": VOCAB_SIZE,
    "hidden_size": 64,
    "intermediate_size": 256,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 128,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
    "bos_token_id": BOS_ID,
    "eos_token_id": BOS_ID,
    "pad_token_id": BOS_ID,
    "attention_bias": False,
    "mlp_bias": False,
    "hidden_act": "silu",
    "initializer_range": 0.02,
}


def _log_steps(total: int) -> tuple[int, ...]:
    """0, 1, 2, 4, ... powers of two below ``total``, then ``total``."""
    steps = [0] + [2**k for k in range(int(math.log2(total)) + 1) if 2**k < total]
    return tuple(steps + [total])


@dataclass(frozen=True)
class TrainingPlan:
    """Everything that decides the weights (a change here changes every checkpoint)."""

    seed: int = 0
    steps: int = 4096
    batch_size: int = 32
    seq_len: int = 128  # tokens per window, BOS included
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    threads: int = 2
    holdout_every: int = 20  # every 20th document is held out for the validation loss
    checkpoints: tuple[int, ...] = field(default_factory=lambda: _log_steps(4096))

    def __post_init__(self) -> None:
        if self.seq_len > MODEL_CONFIG["max_position_embeddings"]:
            limit = MODEL_CONFIG["max_position_embeddings"]
            raise ValueError(f"seq_len {self.seq_len} exceeds the model's {limit} positions")
        if any(s < 0 or s > self.steps for s in self.checkpoints):
            raise ValueError(f"checkpoint steps must lie in [0, {self.steps}]: {self.checkpoints}")


class TrainingError(RuntimeError):
    """The text could not be fetched, or a rerun does not reproduce the committed weights."""


# ----------------------------------------------------------------------------------------- text
def fetch_doc_text(work: Path) -> list[tuple[str, str]]:
    """Download and unpack the pinned ``python3.11-doc`` package; return ``[(path, text)]`` sorted by path."""
    unpacked = unpack_debian_package(DOC_PACKAGE, work, "--text-dir with the unpacked documentation sources")
    return read_text_dir(unpacked / DOC_SOURCES)


def unpack_debian_package(package: str, work: Path, instead: str) -> Path:
    """``apt-get download`` the pinned ``package`` (``name=version``) into ``work`` and unpack it with ``dpkg-deb``
    into ``work/unpacked``, which is returned; ``instead`` names the option a user without apt can pass."""
    work.mkdir(parents=True, exist_ok=True)
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise TrainingError(f"apt-get and dpkg-deb are needed to fetch {package} (a Debian or Ubuntu system); "
                            f"or pass {instead}")
    proc = subprocess.run(["apt-get", "download", package], cwd=work, capture_output=True, text=True)  # noqa: S603,S607
    debs = sorted(work.glob(f"{package.split('=')[0]}_*.deb"))
    if proc.returncode != 0 or not debs:
        raise TrainingError(f"`apt-get download {package}` failed: {proc.stderr.strip()[-400:]}. The pinned "
                            f"version may have left the archive; fetch it by hand and pass {instead}")
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(work / "unpacked")], check=True)  # noqa: S603,S607
    return work / "unpacked"


def read_text_dir(root: Path) -> list[tuple[str, str]]:
    """Every ``*.txt`` under ``root`` as ``(relative path, text)``, sorted by path."""
    root = Path(root)
    files = sorted(p for p in root.rglob("*.txt") if p.is_file())
    if not files:
        raise TrainingError(f"no .txt files under {root}")
    return [(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8", errors="replace")) for p in files]


def split_documents(docs: Sequence[tuple[str, str]], holdout_every: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Byte arrays of the training and held-out documents (every ``holdout_every``-th) and the text's sha256."""
    digest = hashlib.sha256()
    train: list[np.ndarray] = []
    held: list[np.ndarray] = []
    for i, (name, text) in enumerate(docs):
        raw = text.encode("utf-8")
        digest.update(name.encode() + b"\0" + raw + b"\0")
        (held if i % holdout_every == holdout_every - 1 else train).append(np.frombuffer(raw, dtype=np.uint8))
    if not held:
        raise TrainingError(f"{len(docs)} documents: at least {holdout_every} are needed (every "
                            f"{holdout_every}th is held out for the validation loss)")
    return np.concatenate(train), np.concatenate(held), digest.hexdigest()


def sample_batch(data: np.ndarray, gen: torch.Generator, batch_size: int, seq_len: int) -> torch.Tensor:
    """``batch_size`` windows of ``seq_len - 1`` bytes at seeded offsets, each after one BOS."""
    starts = torch.randint(0, len(data) - seq_len, (batch_size,), generator=gen, device="cpu")  # [batch]
    body = np.stack([data[s : s + seq_len - 1] for s in starts.tolist()]).astype(np.int64)  # [batch, seq-1]
    ids = torch.from_numpy(body)
    bos = torch.full((batch_size, 1), BOS_ID, dtype=torch.long, device="cpu")  # batches are made on the host
    return torch.cat([bos, ids], dim=1)  # [batch, seq]


# ----------------------------------------------------------------------------------------- model
def build_model(seed: int) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(**MODEL_CONFIG)
    cfg._attn_implementation = "eager"
    return LlamaForCausalLM(cfg)


def byte_tokenizer() -> Any:
    """A ``PreTrainedTokenizerFast`` whose ids are the UTF-8 bytes, with BOS (256) prepended."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = _bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    vocab["<s>"] = BOS_ID
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", BOS_ID)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="<s>", pad_token="<s>")
    fast.model_max_length = MODEL_CONFIG["max_position_embeddings"]
    return fast


def _bytes_to_unicode() -> dict[int, str]:
    """The byte -> printable character table of byte-level BPE (GPT-2's convention)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(keep, chars, strict=True)}


def save_checkpoint(model: Any, out: Path, step: int, meta: dict[str, Any]) -> Path:
    """Write ``out/step{step}`` as a float16 Hugging Face folder with its tokenizer."""
    folder = out / f"step{step}"
    if folder.exists():
        shutil.rmtree(folder)
    half = {k: v.detach().to(torch.float16).clone() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    model.config.dtype = "float16"
    model.config.to_json_file(str(folder / "config.json"))
    save_file(half, str(folder / "model.safetensors"), metadata={"format": "pt"})
    byte_tokenizer().save_pretrained(str(folder))
    (folder / "training_state.json").write_text(json.dumps({"step": step, **meta}, indent=1, sort_keys=True) + "\n")
    return folder


def checkpoint_tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(Path(folder) / "model.safetensors"))


# ----------------------------------------------------------------------------------------- training
@dataclass
class TrainingLog:
    plan: dict[str, Any]
    model_config: dict[str, Any]
    text_sha256: str
    doc_package: str
    train_bytes: int
    heldout_bytes: int
    torch_version: str
    transformers_version: str
    train_loss: list[float] = field(default_factory=list)  # per step
    heldout_loss: dict[str, float] = field(default_factory=dict)  # step -> loss at each checkpoint
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0


@torch.no_grad()
def heldout_loss(model: torch.nn.Module, data: np.ndarray, seq_len: int, n_windows: int = 64) -> float:
    """Mean next-byte cross-entropy (nats) on ``n_windows`` fixed windows of the held-out text."""
    gen = torch.Generator().manual_seed(12345)
    batch = sample_batch(data, gen, n_windows, seq_len)
    model.eval()
    loss = float(model(input_ids=batch, labels=batch).loss)
    model.train()
    return loss


def train(
    plan: TrainingPlan,
    docs: Sequence[tuple[str, str]],
    out: Path,
    stop_at: int | None = None,
    progress: Callable[[str], None] | None = print,
) -> TrainingLog:
    """Train with ``plan`` on ``docs``, saving a checkpoint at each of ``plan.checkpoints``.

    ``stop_at``: stop after that step (used by ``--check`` to retrain only the start).
    """
    with deterministic_threads(plan.threads):
        return _train(plan, docs, out, stop_at, progress)


def _train(plan: TrainingPlan, docs: Sequence[tuple[str, str]], out: Path, stop_at: int | None,
           progress: Callable[[str], None] | None) -> TrainingLog:
    import transformers

    train_data, held_data, sha = split_documents(docs, plan.holdout_every)
    log = TrainingLog(asdict(plan), dict(MODEL_CONFIG), sha, DOC_PACKAGE, int(train_data.size), int(held_data.size),
                      torch.__version__, transformers.__version__)
    model = build_model(plan.seed)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": plan.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=plan.lr, betas=(0.9, 0.95), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, plan.warmup, plan.steps))
    gen = torch.Generator().manual_seed(plan.seed)
    out.mkdir(parents=True, exist_ok=True)
    start_wall, start_cpu = time.perf_counter(), cpu_seconds()
    last = plan.steps if stop_at is None else min(stop_at, plan.steps)
    for step in range(0, last + 1):
        if step in plan.checkpoints:
            log.heldout_loss[str(step)] = heldout_loss(model, held_data, plan.seq_len)
            save_checkpoint(model, out, step, {"heldout_loss": log.heldout_loss[str(step)], "text_sha256": sha})
            if progress:
                progress(f"step {step:>5}: held-out loss {log.heldout_loss[str(step)]:.3f} nats/byte, "
                         f"{time.perf_counter() - start_wall:.0f} s")
        if step == last:
            break
        batch = sample_batch(train_data, gen, plan.batch_size, plan.seq_len)
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), plan.grad_clip)
        opt.step()
        sched.step()
        log.train_loss.append(round(float(loss.detach()), 5))
    log.cpu_seconds = round(cpu_seconds() - start_cpu, 1)
    log.wall_seconds = round(time.perf_counter() - start_wall, 1)
    return log



def compare_checkpoints(a: Path, b: Path) -> float:
    """Largest absolute difference between two checkpoints' tensors (0.0 when bit-for-bit equal)."""
    ta, tb = checkpoint_tensors(a), checkpoint_tensors(b)
    if ta.keys() != tb.keys():
        raise TrainingError(f"{a} and {b} hold different tensors")
    return max(float((ta[k].float() - tb[k].float()).abs().max()) for k in ta)


def heldout_curve(out: Path = CHECKPOINT_DIR) -> Any:
    """The training log's held-out loss at each checkpoint, as a table ``step, loss``."""
    import pandas as pd

    log = json.loads((Path(out) / "training_log.json").read_text())
    rows = sorted((int(k), float(v)) for k, v in log["heldout_loss"].items())
    return pd.DataFrame(rows, columns=["step", "loss"])


def default_text(text_dir: Path | None, work: Path) -> list[tuple[str, str]]:
    return read_text_dir(text_dir) if text_dir is not None else fetch_doc_text(work)


def run_training(out: Path, plan: TrainingPlan, text_dir: Path | None = None) -> TrainingLog:
    """Train the whole plan into ``out`` and write ``out/training_log.json``."""
    with tempfile.TemporaryDirectory() as tmp:
        docs = default_text(text_dir, Path(tmp))
        log = train(plan, docs, out)
    (out / "training_log.json").write_text(json.dumps(asdict(log), indent=1) + "\n")
    return log


def check_training(out: Path, plan: TrainingPlan, upto: int, text_dir: Path | None = None) -> tuple[int, float]:
    """Retrain up to the first committed checkpoint at or after ``upto`` and compare it bit-for-bit.

    Returns ``(step, largest difference)``; raises :class:`TrainingError` when the text's hash or
    the weights differ.
    """
    logged = json.loads((out / "training_log.json").read_text())
    step = min(s for s in plan.checkpoints if s >= upto)
    with tempfile.TemporaryDirectory() as tmp:
        docs = default_text(text_dir, Path(tmp))
        _, _, sha = split_documents(docs, plan.holdout_every)
        if sha != logged["text_sha256"]:
            raise TrainingError(f"the training text hashes to {sha[:12]}..., the committed run used "
                                f"{logged['text_sha256'][:12]}...: a different package version or text folder")
        fresh = Path(tmp) / "fresh"
        train(plan, docs, fresh, stop_at=step, progress=None)
        diff = compare_checkpoints(out / f"step{step}", fresh / f"step{step}")
    if diff != 0.0:
        raise TrainingError(f"step{step} differs from the committed checkpoint by up to {diff:g}")
    return step, diff
