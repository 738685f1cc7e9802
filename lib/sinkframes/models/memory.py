"""What a model and one batch of its attention will take in memory, known before the weights load.

A 7B model in float32 on a 15 GB Colab T4, or ``batch_size=8`` at ``max_length=256`` with every layer's
attention kept, dies out of memory halfway through a page. :func:`check` estimates the weights (from the
configuration alone: the model is built on the ``meta`` device, no weight is read) and the attention and
logits of one batch, prints them, and refuses with a message naming ``batch_size``, ``dtype`` and
``max_length`` when the device has less free memory than that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .errors import ModelLoadError

#: bytes per weight of each load setting (bitsandbytes' 4-bit keeps about half a byte per weight plus scales)
_QUANT_BYTES = {"4bit": 0.56, "8bit": 1.06}
#: share of the free memory an estimate may take: the forward pass has temporaries the estimate leaves out
HEADROOM = 0.8
#: an environment variable that sets the free memory (in GB) instead of measuring it (tests of the refusal)
FREE_ENV = "SINKFRAMES_FREE_MEMORY_GB"


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes that loading ``ref`` and running one batch will take on ``device``."""

    ref: str
    device: str
    parameters: int
    weights: int
    attention: int  # every layer's attention probabilities of one batch (kept for the analyses), plus one layer's
    logits: int  # the language-model head's output for one batch (decoders, where the caller runs the head)
    free: int | None  # free memory on the device (None: unknown)
    batch_size: int
    max_length: int
    dtype: str
    layers: int
    heads: int

    @property
    def needed(self) -> int:
        return self.weights + self.attention + self.logits

    @property
    def fits(self) -> bool:
        return self.free is None or self.needed <= HEADROOM * self.free

    def line(self) -> str:
        """One sentence for the page: the weights' size in the chosen dtype and what one batch takes."""
        free = "unknown" if self.free is None else _gb(self.free)
        return (f"[sinkframes] {self.ref}: {self.parameters / 1e6:,.1f} M parameters, weights {_gb(self.weights)} in "
                f"{self.dtype}; one batch (batch_size={self.batch_size}, max_length={self.max_length}) takes "
                f"{_gb(self.attention)} of attention ({self.layers} layers x {self.heads} heads)"
                + (f" and {_gb(self.logits)} of logits" if self.logits else "")
                + f"; {free} free on {self.device}")

    def refusal(self) -> str:
        """Why the model is not loaded, and what to change."""
        return (f"{self.ref} would need about {_gb(self.needed)} on {self.device} (weights {_gb(self.weights)} in "
                f"{self.dtype}, attention {_gb(self.attention)} and logits {_gb(self.logits)} for one batch of "
                f"batch_size={self.batch_size} at max_length={self.max_length}), but only {_gb(self.free or 0)} is "
                f"free (at most {HEADROOM:.0%} of it is used). Lower batch_size (attention and logits shrink in "
                "proportion), or max_length (attention shrinks with its square), or load the weights in a smaller "
                "dtype ('float16'; 'bfloat16' on GPUs that have it) or with quantization='4bit' on a CUDA GPU; or "
                "choose a smaller model.")


def _gb(n: int | float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def free_bytes(device: torch.device) -> int | None:
    """Free memory on ``device``: the CUDA allocator's free memory, or the system's available memory."""
    forced = os.environ.get(FREE_ENV, "").strip()
    if forced:
        return int(float(forced) * 1e9)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type != "cpu":
        return None
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
    return None


def _config(ref: str, revision: str | None) -> Any:
    """The transformers config behind ``ref`` without its weights (``None`` where it cannot be read)."""
    from transformers import AutoConfig

    from .gguf import offline_folder
    from .loading import RANDOM_PREFIX
    from .registry import OFFLINE_MODELS

    base = ref[len(RANDOM_PREFIX):] if ref.startswith(RANDOM_PREFIX) else ref
    if base.startswith("tiny:"):
        from .tiny import tiny_config

        return tiny_config(base.split(":", 1)[1])
    where = str(offline_folder(OFFLINE_MODELS[base])[0]) if base in OFFLINE_MODELS else base
    kwargs = {"revision": revision} if revision and not Path(where).expanduser().is_dir() else {}
    try:
        return AutoConfig.from_pretrained(where, **kwargs)
    except (OSError, ValueError):
        return None  # the load itself reports it, with its own message


def estimate(ref: str, *, dtype: str, device: torch.device, batch_size: int, max_length: int,
             revision: str | None = None, quantization: str | None = None, logits: bool = False
             ) -> MemoryEstimate | None:
    """The memory estimate for ``ref`` (``None`` when its config cannot be read before loading). ``logits``: the
    caller runs the language-model head (the output-level check, Fisher); the attention pages run the backbone
    alone, so its output is not counted for them."""
    from transformers import AutoModel, AutoModelForCausalLM

    from .loading import _is_encoder_config, _torch_dtype

    cfg = _config(ref, revision)
    if cfg is None:
        return None
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    factory = AutoModel if _is_encoder_config(text) else AutoModelForCausalLM
    try:
        with torch.device("meta"):
            model = factory.from_config(cfg)
        n_params = sum(p.numel() for p in model.parameters())
    except Exception:  # noqa: BLE001 - an estimate only; the load reports real problems
        return None
    width = torch.empty((), dtype=_torch_dtype(dtype), device="meta").element_size()
    per_weight = _QUANT_BYTES.get(quantization or "", float(width))
    layers, heads = int(text.num_hidden_layers), int(text.num_attention_heads)
    # every layer's probabilities, kept in the weights' dtype, plus one layer's float32 scores and softmax
    attention = batch_size * heads * max_length * max_length * (layers * width + 2 * 4)
    head = logits and not _is_encoder_config(text)
    output = batch_size * max_length * int(text.vocab_size) * max(width, 4) if head else 0
    return MemoryEstimate(ref, str(device), int(n_params), int(n_params * per_weight), int(attention), int(output),
                          free_bytes(device), batch_size, max_length, str(dtype), layers, heads)


def announced(ref: str) -> bool:
    """Whether loading ``ref`` prints its estimate: hub ids and local folders (the sizes a reader chooses);
    the offline and tiny models of the book's own build are small and fixed."""
    from .loading import RANDOM_PREFIX
    from .registry import OFFLINE_MODELS

    base = ref[len(RANDOM_PREFIX):] if ref.startswith(RANDOM_PREFIX) else ref
    if base in OFFLINE_MODELS or base.startswith("tiny:"):
        return False
    # the checkpoints the library ships (Appendix B's training run) are the book's own too: a page that prints a
    # line only when a model loads would read differently from a cold and a cached run
    own = Path(__file__).resolve().parents[1] / "data"
    try:
        return not Path(base).expanduser().resolve().is_relative_to(own)
    except (OSError, ValueError):
        return True


def check(ref: str, *, dtype: str, device: torch.device, batch_size: int, max_length: int,
          revision: str | None = None, quantization: str | None = None, show: bool | None = None,
          logits: bool = False) -> MemoryEstimate | None:
    """Estimate, print (for hub models and folders, or as ``show`` says) and refuse with a ``ModelLoadError``
    when the device cannot hold the weights and one batch (with its logits where ``logits``: see :func:`estimate`)."""
    est = estimate(ref, dtype=dtype, device=device, batch_size=batch_size, max_length=max_length,
                   revision=revision, quantization=quantization, logits=logits)
    if est is None:
        return None
    if show if show is not None else announced(ref):
        print(est.line(), flush=True)
    if not est.fits:
        raise ModelLoadError(est.refusal())
    return est
