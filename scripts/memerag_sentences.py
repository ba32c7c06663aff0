"""Snakemake entry point of rule memerag_sentences: results/meta_eval/data/{memerag_lang}.parquet."""

import logging

from polyrag.logs import run_logged
from polyrag.meta_eval.memerag import memerag_file, read_memerag, require_usable_labels, sample_questions
from polyrag.seeds import rng_for


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    lang = sm.wildcards.memerag_lang
    path = memerag_file(lang, sm.params.meta_eval["variant"], sm.params.meta_eval["dir"], sm.params.cache_dir)
    options = sm.params.meta_eval
    sentences = sample_questions(read_memerag(path, lang), options["max_questions"],
                                 rng_for(sm.params.seed, "memerag", lang))
    require_usable_labels(sentences, f"{path} (the {options['max_questions']} sampled questions)")
    challenging = int(sentences["faithful"].isna().sum())
    logging.getLogger("polyrag").info(
        "%s: %d sentences of %d questions; %d 'Challenging to determine' left out of faithfulness",
        path, len(sentences), sentences["query_id"].nunique(), challenging)
    sentences.to_parquet(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
