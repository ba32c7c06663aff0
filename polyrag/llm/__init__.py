"""The LLM layer: every stage that calls a language model goes through ``LLM.generate``.

Its backends are one table, ``polyrag.llm.backends``.
Responses are cached durably (SQLite) the moment they return.
"""

from polyrag.llm.client import LLM
from polyrag.llm.factory import make_backend, open_llm
from polyrag.llm.types import Request, Response

__all__ = ["LLM", "Request", "Response", "make_backend", "open_llm"]
