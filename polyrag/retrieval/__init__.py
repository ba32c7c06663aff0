"""Retrieval over a corpus (BERGEN's core): corpora, BM25 and dense indexes, reranking, runs.

``corpus`` reads, checks and cuts corpora; ``tokenize`` gives BM25 its tokens per language;
``bm25`` and ``dense`` build, save, load and search indexes; ``rerank`` rescores a run with a
cross-encoder; ``runs`` is the run format (TREC and Parquet) the metrics read; ``retrievers`` is
the table of kinds the workflow schedules; ``metrics`` scores runs against relevance labels
with intervals; ``questions`` reads queries and labels from the question records.
"""
