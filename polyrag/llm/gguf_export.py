"""A GGUF of the fine-tuned student with its LoRA adapter merged, for llama.cpp.

llama.cpp applies an adapter at run time about 3x slower than the base model on CPU (issue 24),
so the adapter is merged into the weights instead. Every weight matrix the adapter targets is
dequantized from the base GGUF, the adapter's update ``(alpha / r) B A`` added, and the sum
quantized to Q8_0; every other tensor (embeddings, norms) and all metadata (tokenizer, templates)
are copied byte for byte. Without an adapter the same matrices are re-quantized alone: the base
model on the student's path, so that the two differ in the adapter and nothing else.

Written with ``gguf`` (llama.cpp's own Python package); the file is cached under a name holding
the adapter's hash and written atomically, so parallel jobs never read half a model.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from polyrag.errors import BackendUnavailable
from polyrag.llm.identity import file_fingerprint
from polyrag.llm.weights import ADAPTER_CONFIG, ADAPTER_WEIGHTS, adapter_digest

#: PEFT's module names (Gemma, Llama, Qwen, Mistral) and llama.cpp's names of the same matrices.
GGUF_MATRIX = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
               "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
LORA_KEY = re.compile(r"layers\.(\d+)\.\w+\.(\w+)\.lora_A\.weight$")


def adapter_targets(adapter: str | Path) -> list[str]:
    """The module names the adapter adapts (``adapter_config.json``'s ``target_modules``), sorted."""
    targets = json.loads((Path(adapter) / ADAPTER_CONFIG).read_text())["target_modules"]
    return sorted(targets) if isinstance(targets, list) else [targets]


def lora_updates(adapter: str | Path) -> dict[str, np.ndarray]:
    """The weight update of every adapted matrix, by its GGUF tensor name; only plain LoRA on
    linear layers is supported."""
    from safetensors.numpy import load_file

    folder = Path(adapter)
    config = json.loads((folder / ADAPTER_CONFIG).read_text())
    unsupported = [key for key in ("use_dora", "fan_in_fan_out", "modules_to_save", "layers_pattern") if config.get(key)]
    if unsupported or config.get("rank_pattern") or config.get("alpha_pattern"):
        raise BackendUnavailable(f"LoRA adapter {folder}: {unsupported or 'per-module ranks'} cannot be merged into "
                                 "a GGUF here; serve it with the transformers or vllm backend")
    rank = config["r"]
    scale = config["lora_alpha"] / (rank ** 0.5 if config.get("use_rslora") else rank)
    weights = load_file(folder / ADAPTER_WEIGHTS)
    updates = {}
    for key, down in weights.items():
        found = LORA_KEY.search(key)
        if found is None:
            continue
        layer, module = found.groups()
        if module not in GGUF_MATRIX:
            raise BackendUnavailable(f"LoRA adapter {folder}: module {module!r} has no known GGUF tensor name")
        up = weights[key.replace("lora_A", "lora_B")]
        updates[f"blk.{layer}.{GGUF_MATRIX[module]}.weight"] = scale * (up.astype(np.float32) @ down.astype(np.float32))
    return updates


def merged_gguf(base: str | Path, adapter: str | Path | None, target_modules: list[str], out: str | Path) -> Path:
    """Write ``out``: ``base`` with the ``target_modules`` matrices of every layer as Q8_0, the
    adapter's update added where it has one (``adapter`` None: the base re-quantized alone)."""
    import gguf

    from polyrag.llm.gguf_reader import PlainArrayGGUFReader

    updates = lora_updates(adapter) if adapter else {}
    unknown = sorted(set(target_modules) - set(GGUF_MATRIX))
    if unknown:
        raise BackendUnavailable(f"modules {unknown} have no known GGUF tensor name")
    suffixes = tuple(f".{GGUF_MATRIX[m]}.weight" for m in target_modules)
    reader = PlainArrayGGUFReader(base)
    names = {tensor.name for tensor in reader.tensors}
    missing = sorted(set(updates) - names)
    if missing:
        raise BackendUnavailable(f"the adapter updates {missing[:3]}, which {Path(base).name} does not have")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(f".{os.getpid()}.partial")
    architecture = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(partial, arch=architecture, endianess=reader.endianess)
    for field in reader.fields.values():  # the writer adds the architecture and the GGUF.* fields itself
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value_type = field.types[0]
        writer.add_key_value(field.name, field.contents(), value_type,
                             sub_type=field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None)
    tensors = []
    for tensor in reader.tensors:
        if tensor.name.startswith("blk.") and tensor.name.endswith(suffixes):
            weight = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
            if tensor.name in updates:
                weight += updates[tensor.name]
            data, kind = gguf.quants.quantize(weight, gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0
        else:
            data, kind = tensor.data, tensor.tensor_type
        writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes, kind)
        tensors.append(data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for data in tensors:
        writer.write_tensor_data(data)
    writer.close()
    os.replace(partial, out)
    return out


def merged_model(base: Path, adapter: str | None, adapter_modules: list[str] | None, cache_dir: str | Path) -> Path:
    """The cached GGUF of ``base`` with the adapter merged (or its matrices re-quantized alone)."""
    if adapter:
        modules = adapter_targets(adapter)
        if adapter_modules and sorted(adapter_modules) != modules:
            raise BackendUnavailable(f"LoRA adapter {adapter} adapts {modules}, not adapter_modules {sorted(adapter_modules)}")
        name = f"{base.stem}+lora-{adapter_digest(adapter)}.gguf"
    else:
        modules = sorted(adapter_modules)
        name = f"{base.stem}+{'-'.join(modules)}-q8_0.gguf"
    # Under the base's fingerprint: a changed base file under the same name is merged again.
    target = Path(cache_dir) / "models" / f"merged-{file_fingerprint(base)}" / name
    return target if target.exists() else merged_gguf(base, adapter, modules, target)
