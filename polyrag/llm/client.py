"""The one entry point stages use: a batch of requests in, responses out, through the cache."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tqdm import tqdm

from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.types import Request, Response

log = logging.getLogger(__name__)


class LLM:
    """A backend with a durable cache in front of it."""

    def __init__(self, backend: Backend, cache: ResponseCache | None = None):
        self.backend = backend
        self.cache = cache if backend.cacheable else None

    def generate(self, requests: Sequence[Request], *, desc: str = "LLM requests") -> list[Response]:
        """Answer every request; cached ones never reach the backend, new ones are cached on arrival."""
        responses: list[Response | None] = [None] * len(requests)
        keys = [r.cache_key(self.backend.name, self.backend.identity) for r in requests]
        todo: list[int] = []
        for i, key in enumerate(keys):
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is None:
                todo.append(i)
            else:
                responses[i] = Response(text=hit[0], cached=True, tokens=hit[1])
        log.info("%s: %d requests, %d from cache, %d to %s",
                 desc, len(requests), len(requests) - len(todo), len(todo), self.backend.name)
        if todo:
            pending = [requests[i] for i in todo]
            with tqdm(total=len(todo), desc=desc, unit="req", mininterval=1.0) as bar:
                for j, response in self.backend.stream(pending):
                    i = todo[j]
                    if response.ok and self.cache is not None:
                        self.cache.put(
                            keys[i],
                            backend=self.backend.name,
                            model=self.backend.identity,
                            request={"messages": requests[i].messages, "prompt": requests[i].prompt,
                                     **requests[i].sampling()},
                            response=response.text,
                            tokens=response.tokens,
                        )
                    responses[i] = response
                    bar.update(1)
        missing = [i for i, r in enumerate(responses) if r is None]
        if missing:
            raise RuntimeError(f"backend {self.backend.name} returned no response for requests {missing[:5]}")
        return responses  # type: ignore[return-value]

    def close(self) -> None:
        self.backend.close()
        if self.cache is not None:
            self.cache.close()
