"""The student: its trainable base checkpoint, and the model entry that serves it with its adapter."""

from __future__ import annotations

from pathlib import Path

from polyrag.errors import ConfigError

# Keys of the student's config that the generation stage's model entry takes as they are.
SERVING_KEYS = ("mode", "device", "dtype", "batch_size", "temperature", "max_tokens", "stop", "resources")


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


def student_entry(student: dict, adapter_dir: str | Path) -> dict:
    """The ``models:`` entry of the fine-tuned student: the ``transformers`` backend on the same base
    with the LoRA adapter merged in (``polyrag.llm.transformers_backend``)."""
    check_student(student)
    source = {"package": student["package"]} if "package" in student else {
        "model": student["model"], **({"revision": student["revision"]} if student.get("revision") else {})}
    serving = {key: student[key] for key in SERVING_KEYS if key in student}
    return {"backend": "transformers", **source, "adapter": str(adapter_dir), **serving}
