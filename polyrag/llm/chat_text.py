"""Chat messages as plain text, for completion-only models (base models, models without a chat template)."""

from __future__ import annotations

from polyrag.prompts import render


def messages_to_text(messages: list[dict[str, str]]) -> str:
    return render("completion.j2", messages=messages)
