"""The interface every backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from polyrag.errors import LLMUnavailable
from polyrag.llm.types import Request, Response


class Backend(ABC):
    """A model behind some API. Subclasses set ``name`` and ``identity``.

    ``identity`` names the model for cache keys with everything that changes its answers (an
    endpoint, a file's content, a Hub commit, an adapter, a numeric option; :mod:`polyrag.llm.identity`)
    and nothing secret: two configs that load the same model share cached responses, two that
    do not never do.
    """

    name: str = "base"
    identity: str = ""
    #: Whether responses go through the durable cache (the mock systems are free to recompute).
    cacheable: bool = True

    @abstractmethod
    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Yield ``(index, response)`` for every request, in any order, as soon as each is ready."""

    def close(self) -> None:
        """Release the model or connections."""


def prompt_too_long(prompt_tokens: int, context: int) -> Response:
    """The one per-request failure an in-process model has: a prompt that does not fit its context
    (a row with ``error`` set, counted against ``max_failure_fraction``)."""
    return Response(text=None, error=f"prompt of {prompt_tokens} tokens does not fit the model's context of {context}")


def split_by_context(lengths: Sequence[int], context: int | None) -> tuple[list[tuple[int, Response]], list[int]]:
    """``(index, prompt_too_long response)`` for every prompt of at least ``context`` tokens, and the
    indices of the prompts that fit (all of them when the context is unknown)."""
    rejected, fits = [], []
    for i, length in enumerate(lengths):
        if context is not None and length >= context:
            rejected.append((i, prompt_too_long(length, context)))
        else:
            fits.append(i)
    return rejected, fits


def engine_failed(backend: Backend, error: BaseException) -> LLMUnavailable:
    """Any other exception of an in-process engine (CUDA out of memory, a crashed worker, a lost
    device) says nothing about the request: the job fails, as an unreachable API does, after the
    responses that arrived have been cached."""
    return LLMUnavailable(f"the {backend.name} engine of {backend.identity} failed: {type(error).__name__}: {error}")
