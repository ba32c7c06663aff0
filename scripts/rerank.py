"""Snakemake entry point of rule rerank: a run's top passages reordered by a cross-encoder
(polyrag.retrieval.rerank); the first stage's rank and score kept beside."""

from polyrag.config.queries import run_name
from polyrag.data.records import read_questions
from polyrag.logs import run_logged
from polyrag.retrieval.corpus import corpus_texts, read_corpus_docids
from polyrag.retrieval.questions import queries_of
from polyrag.retrieval.rerank import CrossEncoderReranker
from polyrag.retrieval.runs import read_run, write_run, write_trec


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    entry = sm.params.reranker
    run = read_run(sm.input.run)
    head = run.loc[run["rank"] <= entry["top_n"], "docid"]  # the passages reranked, read from the corpus
    texts = corpus_texts(read_corpus_docids(sm.input.corpus, head), head)
    reranker = CrossEncoderReranker(entry["model"], batch_size=entry["batch_size"], dtype=entry["dtype"])
    reranked = reranker.rerank(run, queries_of(read_questions(sm.input.questions)), texts, top_n=entry["top_n"])
    write_run(reranked, sm.output.run)
    write_trec(reranked, sm.output.trec, tag=run_name(sm.wildcards.retriever, sm.wildcards.reranker))


run_logged(main, snakemake.log[0])  # noqa: F821
