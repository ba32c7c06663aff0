"""The interface every backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from polyrag.llm.types import Request, Response


class Backend(ABC):
    """A model behind some API. Subclasses set ``name`` and ``identity``.

    ``identity`` names the model for cache keys (an API model id, a Hub id, a GGUF file):
    two configs that load the same model share cached responses.
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
