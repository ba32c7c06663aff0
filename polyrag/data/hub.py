"""Rows of a Hugging Face dataset, or of a local ``{lang}.jsonl`` export in the same schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from polyrag.data.io import read_jsonl
from polyrag.errors import DataError


def hub_rows(
    dataset: str, language: str, split: str, revision: str | None, directory: str | None, cache_dir: str
) -> tuple[str, Iterator[tuple[int, dict]]]:
    """``(source name, (row number, row) pairs)`` from ``directory/{language}.jsonl`` or the Hub."""
    if directory:
        path = Path(directory) / f"{language}.jsonl"
        return str(path), read_jsonl(path)
    try:
        import datasets

        rows = datasets.load_dataset(
            dataset, language, split=split, revision=revision, cache_dir=str(Path(cache_dir) / "hf-datasets")
        )
    except Exception as error:  # noqa: BLE001 - any hub failure gets the same advice
        raise DataError(
            f"could not load {dataset} ({language}, split {split}) from the Hugging Face Hub: {error}. "
            f"Export it to {{dir}}/{language}.jsonl and set data.dir"
        ) from error
    name = f"{dataset}/{language}/{split}"
    return name, ((i + 1, dict(row)) for i, row in enumerate(rows))
