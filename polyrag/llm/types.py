"""The two value types of the LLM layer: a request in, a response out."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    """One chat (``messages``) or completion (``prompt``) request.

    ``context`` carries the question record for backends that answer from gold data
    (the mock systems); it is not sent to any model and is not part of the cache key.
    """

    messages: list[dict[str, str]] | None = None
    prompt: str | None = None
    temperature: float = 0.1
    max_tokens: int = 512
    seed: int = 0
    stop: list[str] = field(default_factory=list)
    context: dict[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a Request needs exactly one of `messages` or `prompt`")

    @property
    def is_chat(self) -> bool:
        return self.messages is not None

    def sampling(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "stop": list(self.stop),
        }

    def cache_key(self, backend: str, model_identity: str) -> str:
        """Hash of everything that determines the output: backend, model, input, sampling."""
        payload = {
            "backend": backend,
            "model": model_identity,
            "messages": self.messages,
            "prompt": self.prompt,
            "sampling": self.sampling(),
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Response:
    """The text a model returned, or the error that remained after retries."""

    text: str | None
    error: str | None = None
    cached: bool = False
    #: prompt + completion tokens the call used, where the backend reports them
    tokens: int | None = None
    #: True when an identical request earlier in the same batch got this response: the call and
    #: its tokens are counted once, on that first request (``calls`` says how many to count)
    repeat: bool = False

    @property
    def calls(self) -> int:
        """Model calls this request accounts for: 1, or 0 for a repeat of an earlier identical request."""
        return 0 if self.repeat else 1

    @property
    def cost_tokens(self) -> int:
        """Tokens this request accounts for (0 for a repeat or when the backend reports none)."""
        return 0 if self.repeat else (self.tokens or 0)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None
