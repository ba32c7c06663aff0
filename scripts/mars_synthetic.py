"""Snakemake entry point of rule mars_synthetic: results/mars/synthetic/{pair}.{parquet,json}."""

import json

import pandas as pd

from polyrag.csv_tables import read_text_table
from polyrag.data.records import read_questions
from polyrag.llm import open_llm
from polyrag.logs import run_logged
from polyrag.mars.labels import split_pair
from polyrag.mars.retrieval_filter import make_embedder
from polyrag.mars.synthetic import few_shot_from_file, few_shot_from_gold, generate_synthetic, truncate_examples


def corpus_passages(sm, gold: pd.DataFrame, embedder, max_tokens: int) -> list[str]:
    """The pair's passages, truncated by embedding-model tokens, each distinct text once."""
    if sm.params.mars["corpus"]["source"] == "xquad":
        texts = gold.loc[gold["role"] == "pool", "Document"]
    else:
        texts = [p["text"] for path in sm.input.corpus for r in read_questions(path) for p in r["passages"]]
    return list(dict.fromkeys(embedder.truncate(t, max_tokens) for t in texts))


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    mars, pair, seed = sm.params.mars, sm.wildcards.pair, sm.params.seed
    gold = pd.read_parquet(sm.input.gold)
    count = mars["few_shot"]["count"]
    if mars["few_shot"]["file"]:
        path = mars["few_shot"]["file"]
        examples = few_shot_from_file(read_text_table(path, sep="\t"), path, pair, count)
    else:
        examples = few_shot_from_gold(gold, count, pair)
    embedder = make_embedder(mars["filter"])
    examples = tuple(truncate_examples(e, mars["few_shot"]["max_tokens"], embedder) for e in examples)
    corpus = corpus_passages(sm, gold, embedder, mars["corpus"]["max_tokens"])
    generator = sm.params.generator
    llm = open_llm(generator["name"], generator["entry"], cache_dir=sm.params.cache_dir, seed=seed,
                   threads=sm.threads)
    try:
        settings = {**mars["generation"], "second_languages": mars["second_languages"]}
        table, stats = generate_synthetic(llm, generator["entry"], pair, corpus, examples, settings, embedder, seed)
    finally:
        llm.close()
    stats["passage_language"], stats["question_language"] = split_pair(pair)
    table.to_parquet(sm.output.table, index=False)
    with open(sm.output.stats, "w", encoding="utf-8") as handle:
        json.dump(stats, handle, indent=2, ensure_ascii=False)


run_logged(main, snakemake.log[0])  # noqa: F821
