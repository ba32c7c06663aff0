"""Answers as the workflow hands them to the reference judge."""

from __future__ import annotations


def with_detected_languages(records: list[dict], answers: list[dict]) -> list[dict]:
    """``answers`` with their ``target_language`` as the workflow gives it to the reference judge:
    from the answers' deterministic features."""
    from polyrag.features.deterministic import deterministic_features

    rows = deterministic_features(records, answers)
    return [{**answer, "target_language": row["target_language"]} for answer, row in zip(answers, rows)]
