"""Snakemake entry point of rule bm25_index: the BM25 index of one corpus language streamed from its
corpus file (polyrag.retrieval.bm25), or the list of its shards; a corpus whose BM25 index would not
fit the job's memory stops before it is read."""

from polyrag.errors import DataError
from polyrag.logs import run_logged
from polyrag.retrieval.bm25 import BM25Index, ShardedBM25, file_chunks, log_analysis
from polyrag.retrieval.corpus import corpus_size
from polyrag.retrieval.retrievers import BM25_BYTES_PER_PASSAGE, bm25_memory_mb


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    if sm.params.retriever["shards"] > 1:
        ShardedBM25.write(sm.output[0], sm.input)
        return
    n, memory = corpus_size(sm.input[0]), sm.resources.mem_mb
    if bm25_memory_mb(n) > memory:
        raise DataError(f"{sm.input[0]}: BM25 over its {n:,} passages needs about {bm25_memory_mb(n):,} MB "
                        f"({BM25_BYTES_PER_PASSAGE:,} bytes a passage), more than this job's mem_mb {memory:,}: give "
                        "the corpus's size: (retrieval.corpora) so that the workflow indexes it in shards that fit, "
                        "or set the retriever's resources: {mem_mb: ...}")
    stopwords = sm.params.retriever.get("stopwords", False)
    index = BM25Index.build_chunks(file_chunks(sm.input[0]), sm.wildcards.corpus_lang, stopwords=stopwords, total=n)
    log_analysis(index.tokenizer)
    index.save(sm.output[0])


run_logged(main, snakemake.log[0])  # noqa: F821
