"""Local Hugging Face causal LMs (CPU or GPU), batched with left padding."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import groupby

from polyrag.errors import BackendUnavailable
from polyrag.llm.base import Backend
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.types import Request, Response


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    cuts = [text.find(s) for s in stop if s and s in text]
    return text[: min(cuts)] if cuts else text


class TransformersBackend(Backend):
    name = "transformers"

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        mode: str = "chat",
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        trust_remote_code: bool = False,
    ):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise BackendUnavailable(
                f"backend 'transformers' for model {model!r} needs torch and transformers: "
                f"pip install 'polyrag[hf]' ({error})"
            ) from error
        self._torch = torch
        self.identity = f"{model}@{revision}" if revision else model
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
        ).to(device)
        self.model.eval()

    def prompt_text(self, request: Request) -> str:
        if not request.is_chat:
            return request.prompt
        if self.mode == "chat" and getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(request.messages, tokenize=False, add_generation_prompt=True)
        return messages_to_text(request.messages)

    def _generate(self, batch: list[Request]) -> list[Response]:
        torch = self._torch
        first = batch[0]
        texts = [self.prompt_text(r) for r in batch]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
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
        # Requests with the same sampling parameters share a batch (generate() takes one setting).
        order = sorted(range(len(requests)), key=lambda i: repr(requests[i].sampling()))
        for _, group in groupby(order, key=lambda i: repr(requests[i].sampling())):
            group = list(group)
            for start in range(0, len(group), self.batch_size):
                idx = group[start : start + self.batch_size]
                try:
                    yield from zip(idx, self._generate([requests[i] for i in idx]))
                except Exception as error:  # noqa: BLE001 - recorded per request
                    yield from ((i, Response(text=None, error=f"{type(error).__name__}: {error}")) for i in idx)

    def close(self) -> None:
        del self.model
