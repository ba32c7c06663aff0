"""Any OpenAI-compatible endpoint (OpenAI, Azure, a vLLM or llama.cpp server).

Requests run on an asyncio loop in a worker thread with at most ``concurrency`` in flight;
429, 5xx, timeouts and dropped connections are retried with exponential backoff; each
response is handed back to the caller (who caches it) the moment it arrives.

When a request still cannot reach the model after its retries (or the endpoint refuses the key
or the model name), no new request is started, those in flight finish and are handed back, and
the stream raises ``LLMUnavailable``: an outage fails the job instead of becoming answers.
A request the endpoint rejects on its own merits (400, 422: e.g. a prompt longer than the
context) is a ``Response`` with ``error`` set, as before.

The model's identity (its cache keys) holds the model name, the endpoint (unless it is the OpenAI
API), a mode other than ``chat`` and ``extra_body`` (a served adapter, a quantisation, sampling
extras): pointing a model at another server asks that server. The API key is never part of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import random
import threading
from collections.abc import Iterator, Sequence

import openai

from polyrag.errors import BackendUnavailable, LLMUnavailable
from polyrag.llm.base import Backend
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.identity import OPENAI_API, endpoint, with_options
from polyrag.llm.types import Request, Response

# Errors worth another try: the server is busy or the network hiccuped.
RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)
# Errors that say nothing about the request itself: the endpoint refuses this client or model.
REFUSED = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


def is_retryable(error: Exception) -> bool:
    if isinstance(error, RETRYABLE):
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500


def is_unavailable(error: Exception) -> bool:
    """Whether the model could not answer at all (as opposed to rejecting this one request)."""
    return is_retryable(error) or isinstance(error, REFUSED)


def retry_after_seconds(error: Exception) -> float | None:
    """The server's own ``Retry-After`` header, when it sent one."""
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def usage_tokens(completion) -> int | None:
    usage = getattr(completion, "usage", None)
    return getattr(usage, "total_tokens", None)


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        mode: str = "chat",
        concurrency: int = 8,
        max_retries: int = 5,
        timeout: float = 120.0,
        backoff_initial: float = 1.0,
        backoff_max: float = 60.0,
        extra_body: dict | None = None,
    ):
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise BackendUnavailable(
                    f"model {model!r}: environment variable {api_key_env} is not set "
                    "(set it, or set api_key_env: null for a server that needs no key)"
                )
        else:
            api_key = "no-key"  # local servers ignore it, the client insists on one
        # The server and what is sent besides the request pick the answers; the key does not.
        served_by = endpoint(base_url)
        self.identity = with_options(model if served_by == OPENAI_API else f"{model}@{served_by}",
                                     mode=None if mode == "chat" else mode, extra_body=extra_body or None)
        self.model = model
        self.mode = mode
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.extra_body = extra_body or {}
        self._client_kwargs = {"api_key": api_key, "base_url": base_url, "timeout": timeout, "max_retries": 0}

    async def _call(self, client: openai.AsyncOpenAI, request: Request) -> Response:
        common = {
            "model": self.model,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "stop": request.stop or None,
            "extra_body": self.extra_body or None,
        }
        if self.mode == "chat":
            if not request.is_chat:
                raise ValueError("chat mode needs chat requests")
            out = await client.chat.completions.create(messages=request.messages, **common)
            return Response(text=out.choices[0].message.content or "", tokens=usage_tokens(out))
        prompt = request.prompt if not request.is_chat else messages_to_text(request.messages)
        out = await client.completions.create(prompt=prompt, **common)
        return Response(text=out.choices[0].text, tokens=usage_tokens(out))

    async def _one(self, client, semaphore, rng, request: Request, outage: list[str],
                   stop: asyncio.Event) -> Response | None:
        """The response, or None when the model is unavailable (``outage`` then says why)."""
        attempt = 0
        while True:
            async with semaphore:
                if stop.is_set():
                    return None
                try:
                    return await self._call(client, request)
                except Exception as error:  # noqa: BLE001 - classified below
                    failure = error
                    description = f"{type(error).__name__} after {attempt + 1} attempt(s): {error}"
                    if not is_unavailable(error):
                        return Response(text=None, error=description)
                    if not is_retryable(error) or attempt >= self.max_retries:
                        outage.append(description)
                        stop.set()
                        return None
            delay = retry_after_seconds(failure)
            if delay is None:
                delay = min(self.backoff_max, self.backoff_initial * 2**attempt) * (0.5 + rng.random())
            attempt += 1
            with contextlib.suppress(asyncio.TimeoutError):  # wakes early when another request gave up
                await asyncio.wait_for(stop.wait(), delay)

    async def _run(self, requests: Sequence[Request], out: queue.Queue) -> None:
        semaphore = asyncio.Semaphore(self.concurrency)
        rng = random.Random(0)  # jitter only; does not affect outputs
        outage: list[str] = []
        stop = asyncio.Event()  # set by the first request that finds the model unavailable
        async with openai.AsyncOpenAI(**self._client_kwargs) as client:

            async def task(i: int, request: Request) -> None:
                response = await self._one(client, semaphore, rng, request, outage, stop)
                if response is not None:
                    out.put((i, response))

            await asyncio.gather(*(task(i, r) for i, r in enumerate(requests)))
        if outage:
            # (the endpoint as the identity names it: a password or key in the URL never reaches a log)
            raise LLMUnavailable(f"model {self.model!r} at {endpoint(self._client_kwargs['base_url'])} "
                                 f"is unavailable: {outage[0]}")

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        out: queue.Queue = queue.Queue()
        failure: list[BaseException] = []

        def worker() -> None:
            try:
                asyncio.run(self._run(requests, out))
            except BaseException as error:  # surfaced in the caller's thread
                failure.append(error)
            finally:
                out.put(None)

        thread = threading.Thread(target=worker, name="openai-backend", daemon=True)
        thread.start()
        while (item := out.get()) is not None:
            yield item
        thread.join()
        if failure:
            raise failure[0]
