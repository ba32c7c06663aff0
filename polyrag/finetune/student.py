"""The student: its trainable base checkpoint, and the model entry that serves it with its adapter."""

from __future__ import annotations

from pathlib import Path

from polyrag.errors import ConfigError
from polyrag.llm.backends import LLM_BACKENDS

# Keys of the student's config that the generation stage's model entry takes as they are, per backend
# that serves an adapter (``adapters`` in ``polyrag.llm.backends``).
COMMON_KEYS = ("temperature", "max_tokens", "stop", "resources", "family", "judged")
SERVING_KEYS = {
    "transformers": ("mode", "device", "dtype", "batch_size", *COMMON_KEYS),
    "vllm": ("mode", "dtype", "max_model_len", *COMMON_KEYS),
    "llama_cpp": ("mode", "n_ctx", "n_threads", *COMMON_KEYS),
}

def check_student(student: dict, where: str = "finetune.student") -> None:
    if ("model" in student) == ("package" in student):
        raise ConfigError(f"{where}: give exactly one of `model` (a transformers model) or `package` (a GGUF package)")
    if "response_prefix" in student:
        raise ConfigError(f"{where}.response_prefix: the fine-tuned student writes the whole answer; "
                          "a response prefix would cut the teacher's answers it learns from")


def base_checkpoint(student: dict, cache_dir: str | Path) -> str:
    """What ``from_pretrained`` loads: the Hub id or folder, or the GGUF package converted once to a
    plain float32 checkpoint under ``cache_dir``."""
    check_student(student)
    if "package" in student:
        from polyrag.llm.gguf_checkpoint import checkpoint_from_gguf_package

        return str(checkpoint_from_gguf_package(student["package"], cache_dir))
    return student["model"]


def student_entry(student: dict, adapter_dir: str | Path | None, lora_rank: int = 16,
                  lora_targets: list[str] | None = None) -> dict:
    """The ``models:`` entry of the fine-tuned student: by default the ``transformers`` backend on the
    same base with the LoRA adapter merged in (``polyrag.llm.transformers_backend``); with ``serve:
    vllm``, vLLM with LoRA enabled for the adapter (``polyrag.llm.vllm_backend``), a Hub model only;
    with ``serve: llama_cpp``, the adapter merged into the GGUF ``package`` (its adapted matrices in
    Q8_0, ``polyrag.llm.gguf_export``) on llama.cpp. Without ``adapter_dir``: the student's control,
    the same base served the same way (on llama.cpp, its ``lora_targets`` re-quantized alike)."""
    check_student(student)
    serve = student.get("serve") or "transformers"
    if not LLM_BACKENDS[serve].adapters:
        raise ConfigError(f"finetune.student.serve: {serve} serves no LoRA adapter")
    serving = {key: student[key] for key in SERVING_KEYS[serve] if student.get(key) is not None}
    revision = {"revision": student["revision"]} if student.get("revision") else {}
    if serve == "llama_cpp":
        if "package" not in student:
            raise ConfigError("finetune.student.serve: llama_cpp serves a GGUF `package`, not a transformers `model`")
        merge = {"adapter": str(adapter_dir)} if adapter_dir else {"adapter_modules": sorted(lora_targets or [])}
        return {"backend": "llama_cpp", "package": student["package"], **merge, **serving}
    if serve == "vllm":
        if "model" not in student:
            raise ConfigError("finetune.student.serve: vllm serves a Hugging Face model (`model`), not a GGUF `package`")
        lora = {"adapter": str(adapter_dir), "max_lora_rank": 1 << max(4, (int(lora_rank) - 1).bit_length())} \
            if adapter_dir else {}  # vLLM takes ranks 16, 32, 64, ...
        return {"backend": "vllm", "model": student["model"], **revision, **lora, **serving}
    source = {"package": student["package"]} if "package" in student else {"model": student["model"], **revision}
    return {"backend": "transformers", **source, **({"adapter": str(adapter_dir)} if adapter_dir else {}), **serving}
