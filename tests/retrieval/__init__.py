"""Tests of polyrag.retrieval: corpora, tokens, BM25, dense indexes, reranking, runs."""
