"""Cut the public-data subsets the embedded demo reads, from full local copies of the upstream files.

    python resources/cut_demo_subsets.py --xquad DIR --memerag DIR

XQuAD (resources/xquad/): articles whose position in the file is a multiple of 4 (12 of 48), in
English and German, every paragraph and question of them, the SQuAD v1.1 layout unchanged.
MEMERAG (resources/memerag/): per language, the first 30 questions of the file, then the first 10
further questions that have a sentence labelled "Unrelated to the question" (so that relevance has
both classes in every language), in file order, lines unchanged.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
XQUAD_LANGUAGES = ("en", "de")
XQUAD_ARTICLE_STEP = 4
MEMERAG_LANGUAGES = ("en", "de", "es", "fr", "hi")
MEMERAG_FIRST, MEMERAG_UNRELATED = 30, 10


def cut_xquad(source: Path, target: Path) -> None:
    for lang in XQUAD_LANGUAGES:
        document = json.loads((source / f"xquad.{lang}.json").read_text(encoding="utf-8"))
        document["data"] = document["data"][::XQUAD_ARTICLE_STEP]
        (target / f"xquad.{lang}.json").write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")


def has_unrelated(line: str) -> bool:
    return any(s["relevance"] == "Unrelated to the question" for s in json.loads(line)["answer"])


def cut_memerag(source: Path, target: Path) -> None:
    for lang in MEMERAG_LANGUAGES:
        lines = [line for line in (source / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        extra = [line for line in lines[MEMERAG_FIRST:] if has_unrelated(line)][:MEMERAG_UNRELATED]
        (target / f"{lang}.jsonl").write_text("\n".join(lines[:MEMERAG_FIRST] + extra) + "\n", encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--xquad", type=Path, required=True, help="folder with the full xquad.{lang}.json")
    parser.add_argument("--memerag", type=Path, required=True, help="folder with the full MEMERAG {lang}.jsonl")
    args = parser.parse_args()
    cut_xquad(args.xquad, HERE / "xquad")
    cut_memerag(args.memerag, HERE / "memerag")
