"""A ``models:`` or ``judges:`` entry mixes keys the workflow reads (sampling, scheduling, the
arena) with the backend's own options; the LLM layer gets the backend and its options only."""

from __future__ import annotations

# Keys the workflow reads. wrong_language_from is a mock system's option read by the generation
# stage (which answers it copies), not by the mock backend.
WORKFLOW_KEYS = frozenset({"judge", "temperature", "max_tokens", "resources", "response_prefix", "stop", "family",
                           "contestants", "max_questions", "members", "wrong_language_from"})


def backend_options(entry: dict) -> dict:
    """``entry`` as ``polyrag.llm.open_llm`` takes it: ``backend`` and that backend's options."""
    return {key: value for key, value in entry.items() if key not in WORKFLOW_KEYS}
