"""MIRACL's corpus (``miracl/miracl-corpus`` on the Hugging Face hub): Wikipedia cut into passages,
one folder per language, ``miracl-corpus-v1.0-{lang}/docs-{i}.jsonl.gz``, rows ``docid, title,
text`` (docids ``{article}#{passage}``). The passages are MIRACL's unit of relevance (its qrels
judge them), so they are not cut again by default (``chunk_words: null``).

The files are fetched once per language with ``huggingface_hub.snapshot_download`` into the cache
the questions' downloads use (``{cache_dir}/hf-datasets``, ``polyrag.data.hub``), at the corpus's
``revision`` (a commit of the dataset; null: its main branch), or read from a local copy (``dir``:
the folder that holds ``miracl-corpus-v1.0-{lang}/``). They are read line by line, in shard order,
by ``polyrag.retrieval.corpus.write_corpus_batches``: 33M English passages never sit in memory.

``SIZES``: the passages per language that MIRACL's paper gives (Zhang et al. 2023, TACL, Table 1),
used only to size the cluster jobs of a corpus before it is downloaded; the corpus job logs the
count it wrote. German and Yoruba, MIRACL's later "surprise" languages, are not in that table: give
their ``size:`` in the config to size their jobs.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from polyrag.errors import DataError

log = logging.getLogger(__name__)

DATASET = "miracl/miracl-corpus"
FOLDER = "miracl-corpus-v1.0-{lang}"
SHARDS = "docs-*.jsonl.gz"
SIZES = {
    "ar": 2_061_414, "bn": 297_265, "en": 32_893_221, "es": 10_373_953, "fa": 2_207_172, "fi": 1_883_509,
    "fr": 14_636_953, "hi": 506_264, "id": 1_446_315, "ja": 6_953_614, "ko": 1_486_752, "ru": 9_543_918,
    "sw": 131_924, "te": 518_079, "th": 542_166, "zh": 4_934_368,
}
#: MIRACL's corpus languages: SIZES's and the two added later.
LANGUAGES = frozenset([*SIZES, "de", "yo"])
#: What a corpus of source miracl takes under ``miracl:`` (the config's defaults).
OPTIONS = {"dataset": DATASET, "revision": None, "dir": None}


def shard_number(path: Path) -> int:
    """``docs-12.jsonl.gz`` -> 12: shards are read in their numeric order (docs-10 after docs-9)."""
    found = re.search(r"(\d+)\.jsonl\.gz$", path.name)
    return int(found.group(1)) if found else -1


def corpus_files(language: str, options: dict, cache_dir: str | Path) -> list[Path]:
    """The shards of ``language``'s corpus, in order: from ``options["dir"]``, else downloaded (once,
    cached) at ``options["revision"]``."""
    folder = FOLDER.format(lang=language)
    if options.get("dir"):
        root = Path(options["dir"])
    else:
        dataset = options.get("dataset") or DATASET
        try:
            from huggingface_hub import snapshot_download

            root = Path(snapshot_download(dataset, repo_type="dataset", revision=options.get("revision"),
                                          allow_patterns=[f"{folder}/{SHARDS}"],
                                          cache_dir=str(Path(cache_dir) / "hf-datasets")))
        except Exception as error:  # noqa: BLE001 - any hub failure gets the same advice
            raise DataError(f"could not download {folder} of {dataset} from the Hugging Face Hub: {error}. Download "
                            f"{folder}/ (its {SHARDS}) by hand and set the corpus's miracl.dir to the folder holding "
                            "it") from error
        log.info("%s: %s at %s", dataset, folder, root.name)  # the snapshot folder is named by its commit
    files = sorted((root / folder).glob(SHARDS), key=shard_number)
    if not files:
        raise DataError(f"{root / folder}: no {SHARDS} files: MIRACL's corpus has no language {language!r} there "
                        f"(MIRACL's languages: {', '.join(sorted(LANGUAGES))})")
    return files
