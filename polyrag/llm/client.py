"""The one entry point stages use: a batch of requests in, responses out, through the cache."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from polyrag.errors import LLMUnavailable
from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.types import Request, Response
from polyrag.progress import progress

log = logging.getLogger(__name__)


class LLM:
    """A backend with a durable cache in front of it."""

    def __init__(self, backend: Backend, cache: ResponseCache | None = None):
        self.backend = backend
        self.cache = cache if backend.cacheable else None

    def generate(self, requests: Sequence[Request], *, desc: str = "LLM requests") -> list[Response]:
        """Answer every request; cached ones never reach the backend, new ones are cached on arrival.

        Requests with the same cache key are sent once and share the response (two models with
        the same answer give the judge the same prompt); every one after the first is marked
        ``repeat``, so that calls and tokens count each distinct request once. A response read
        from the cache carries the tokens it used when it was made: what these results cost is
        the same whether they were computed now or by an earlier run. When the backend raises
        ``LLMUnavailable`` the responses received so far are already cached and the error
        propagates, so the job fails and its rerun sends only what is missing."""
        responses: list[Response | None] = [None] * len(requests)
        keys = [r.cache_key(self.backend.name, self.backend.identity) for r in requests]
        askers: dict[str, list[int]] = {}  # each request to send -> the indices that asked for it
        for i, key in enumerate(keys):
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                responses[i] = Response(text=hit[0], cached=True, tokens=hit[1])
            else:
                # A backend outside the cache (the mock systems) answers from each request's context.
                askers.setdefault(key if self.backend.cacheable else str(i), []).append(i)
        todo = list(askers.values())
        asked = sum(len(indices) for indices in todo)
        log.info("%s: %d requests, %d from cache, %d duplicates, %d to %s", desc, len(requests),
                 len(requests) - asked, asked - len(todo), len(todo), self.backend.name)
        relost = self.cache.lost([keys[indices[0]] for indices in todo]) if self.cache is not None and todo else 0
        if relost:
            log.warning("%s: %d of the %d requests to %s are asked again because the damaged cache %s lost them",
                        desc, relost, len(todo), self.backend.name, self.cache.path)
        if todo:
            received = 0
            try:
                with progress(total=len(todo), desc=desc, unit="req") as bar:
                    for j, response in self.backend.stream([requests[indices[0]] for indices in todo]):
                        first = todo[j][0]
                        if response.ok and self.cache is not None:
                            self.cache.put(
                                keys[first],
                                backend=self.backend.name,
                                model=self.backend.identity,
                                request={"messages": requests[first].messages, "prompt": requests[first].prompt,
                                         **requests[first].sampling()},
                                response=response.text,
                                tokens=response.tokens,
                            )
                        for i in todo[j]:
                            responses[i] = response
                        received += 1
                        bar.update(1)
            except LLMUnavailable as error:
                raise LLMUnavailable(
                    f"{desc}: {error}; {received} of {len(todo)} new responses arrived and are cached; "
                    "rerun the job once the model is reachable: it resumes where this one stopped"
                ) from error
        missing = [i for i, r in enumerate(responses) if r is None]
        if missing:
            raise RuntimeError(f"backend {self.backend.name} returned no response for requests {missing[:5]}")
        if self.backend.cacheable:  # (a backend outside the cache answers each request on its own)
            seen: set[str] = set()
            for i, key in enumerate(keys):
                if key in seen:
                    responses[i] = dataclasses.replace(responses[i], repeat=True)
                seen.add(key)
        return responses  # type: ignore[return-value]

    def close(self) -> None:
        self.backend.close()
        if self.cache is not None:
            self.cache.close()
