"""Retrieval end to end (issue 41): the demo corpus indexed by BM25 and by multilingual-e5-small
(in two shards gathered into one faiss index; for German questions from the English corpus, a
cross-lingual datastore), runs scored against the questions' labels, and grounded mock systems
given each run's first passages. A grounded mock is right exactly when a relevant passage is among
those given, so the arena must rank the systems by the share of questions their retriever put a
relevant passage in the top k for (read here from the runs themselves), between the closed-book
and oracle baselines. A cross-encoder (a tiny one built here) reranks BM25's first 5 for one system."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from polyrag.retrieval.runs import read_run, read_trec

from tests.helpers.workflow import run_config, scheduled_jobs, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

SYSTEMS = {"mock-bm25-3": ("bm25", 3), "mock-e5-1": ("e5-en", 1), "mock-bm25-1": ("bm25", 1),
           "mock-bm25-tiny-1": ("bm25+tiny-ce", 1)}
TOP_N = 5  # the first stage's passages the cross-encoder reranks


def retrieval_config(repo, tmp_path):
    from tests.helpers.tiny_models import sequence_classifier

    cross_encoder = tmp_path / "cross-encoder"
    if not cross_encoder.exists():
        sequence_classifier(cross_encoder, {0: "LABEL_0"}, max_positions=512)
    return {
        "languages": ["en", "de"], "seed": 42, "cache_dir": str(tmp_path / "cache"),
        "data": {"source": "demo", "dir": str(repo / "resources" / "demo"), "max_questions": 12, "arena_queries": 12},
        "models": {"mock-grounded": {"backend": "mock", "grounded": True,
                                     "baselines": {"closed_book": "mock-closed-book", "oracle": "mock-oracle"}}},
        "judges": {"reference": {"backend": "reference"}},
        "arena": {"judge": "reference", "surrogate": {"holdout_repeats": 5}},
        "retrieval": {"corpora": {"demo": {"source": "demo"}},
                      "retrievers": {"bm25": {"kind": "bm25", "corpus": "demo"},
                                     "e5-en": {"kind": "dense", "corpus": "demo", "model": "multilingual-e5-small",
                                               "corpus_language": "en", "shards": 2, "resources": {"gpu": 0}}},
                      "rerankers": {"tiny-ce": {"kind": "cross_encoder", "model": str(cross_encoder), "top_n": TOP_N,
                                                "resources": {"gpu": 0}}},
                      "intervals": {"bootstrap": 200}},
        "systems": {name: {"generator": "mock-grounded", "retriever": run.split("+")[0], "top_k": k,
                           "reranker": run.split("+")[1] if "+" in run else None}
                    for name, (run, k) in SYSTEMS.items()},
        "checks": {"passage_order": True},
    }


@pytest.fixture(scope="module")
def retrieved(repo, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("retrieval")
    config = retrieval_config(repo, workdir)
    run_config(repo, workdir, config)
    return workdir, config


def hits(run: pd.DataFrame, questions: pd.DataFrame, k: int) -> dict[str, bool]:
    """Per question: a relevant passage among the run's first k (computed here from the run)."""
    relevant = questions.set_index("query_id")["relevant_docids"].map(set)
    head = run[run["rank"] <= k]
    found = head.groupby("query_id")["docid"].agg(set)
    return {q: bool(found.get(q, set()) & relevant[q]) for q in questions["query_id"]}


def test_runs_metrics_and_the_systems_passages(retrieved):
    workdir, config = retrieved
    board = pd.read_csv(workdir / "results/retrieval/leaderboard.csv", keep_default_na=False, na_values=[""])
    for lang in config["languages"]:
        questions = pd.read_parquet(workdir / f"results/data/{lang}.parquet")
        relevant = questions.set_index("query_id")["relevant_docids"].map(set)
        for retriever in ("bm25", "e5-en"):
            run = read_run(workdir / f"results/retrieval/runs/{retriever}/{lang}.parquet")
            trec = read_trec(workdir / f"results/retrieval/runs/{retriever}/{lang}.trec")
            assert trec[["query_id", "docid", "rank"]].equals(run[["query_id", "docid", "rank"]])
            # Recall@5 by hand: the share of a question's relevant docids among its first 5, averaged
            by_hand = [len(set(run[(run.query_id == q) & (run["rank"] <= 5)].docid) & relevant[q]) / len(relevant[q])
                       for q in questions["query_id"]]
            row = board[(board.model == retriever) & (board.lang == lang)].iloc[0]
            assert row["Recall@5"] == pytest.approx(sum(by_hand) / len(by_hand), rel=5e-4)  # 4 digits
            assert row["Recall@5_lower"] <= row["Recall@5"] <= row["Recall@5_upper"]
        # the English corpus for German questions: the demo is parallel, so the docids (and labels) match
        assert set(read_run(workdir / f"results/retrieval/runs/e5-en/{lang}.parquet").docid) <= set(
            pd.read_parquet(workdir / "results/retrieval/corpora/demo/en.parquet").docid)
        # each system's answers carry exactly its run's first k passages, with the corpus's text
        corpus = pd.read_parquet(workdir / f"results/retrieval/corpora/demo/{lang}.parquet").set_index("docid")
        for name, (retriever, k) in SYSTEMS.items():
            run = read_run(workdir / f"results/retrieval/runs/{retriever}/{lang}.parquet")
            answers = pd.read_parquet(workdir / f"results/answers/{name}/{lang}.parquet")
            assert (answers["passage_source"] == "retrieved").all()  # as the leaderboard's passages column says
            for query_id, passages in zip(answers["query_id"], answers["passages"]):
                expected = run[(run.query_id == query_id) & (run["rank"] <= k)].sort_values("rank").docid.tolist()
                assert [p["docid"] for p in passages] == expected
                if retriever == "bm25":  # the question's own corpus
                    assert [p["text"] for p in passages] == corpus.loc[expected, "text"].tolist()


def test_the_cross_encoder_reorders_the_first_stages_top_n_by_its_own_scores(retrieved):
    """The reranked run holds BM25's first TOP_N per question, in the order of the model's logits
    computed here with transformers alone on (question, passage contents)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from polyrag.retrieval.corpus import corpus_texts

    workdir, config = retrieved
    path = config["retrieval"]["rerankers"]["tiny-ce"]["model"]
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    reordered = 0
    for lang in config["languages"]:
        first = read_run(workdir / f"results/retrieval/runs/bm25/{lang}.parquet")
        reranked = read_run(workdir / f"results/retrieval/runs/bm25+tiny-ce/{lang}.parquet")
        questions = pd.read_parquet(workdir / f"results/data/{lang}.parquet").set_index("query_id")["query"]
        texts = corpus_texts(pd.read_parquet(workdir / f"results/retrieval/corpora/demo/{lang}.parquet"), first["docid"])
        for query_id, head in first[first["rank"] <= TOP_N].groupby("query_id"):
            docids = head.sort_values("rank")["docid"].tolist()
            with torch.no_grad():
                batch = tokenizer([questions[query_id]] * len(docids), [texts[d] for d in docids], padding=True,
                                  truncation=True, max_length=512, return_tensors="pt")
                logits = model(**batch).logits[:, 0].tolist()
            logit = dict(zip(docids, logits))
            mine = reranked[reranked.query_id == query_id].sort_values("rank")
            assert sorted(mine["docid"]) == sorted(docids) and mine["rank"].tolist() == list(range(1, len(docids) + 1))
            # in the order of the model's logits: the tiny model reads most demo words as [UNK], so
            # passages can differ in the seventh digit, where batching and padding round differently
            ordered = [logit[d] for d in mine["docid"]]
            assert all(a >= b - 1e-5 for a, b in zip(ordered, ordered[1:])), (query_id, ordered)
            reordered += mine["docid"].tolist() != docids
        answers = pd.read_parquet(workdir / f"results/answers/mock-bm25-tiny-1/{lang}.parquet")
        top = reranked[reranked["rank"] == 1].set_index("query_id")["docid"]
        assert [[p["docid"] for p in given] for given in answers["passages"]] == [[top[q]] for q in answers["query_id"]]
    assert reordered > 0  # the model did reorder some question's passages


def test_the_arena_ranks_retrieved_systems_by_their_retrievers_hits(retrieved):
    workdir, config = retrieved
    share = {"mock-closed-book": 0.0, "mock-oracle": 1.0}
    for name, (retriever, k) in SYSTEMS.items():
        found = [hit for lang in config["languages"] for hit in hits(
            read_run(workdir / f"results/retrieval/runs/{retriever}/{lang}.parquet"),
            pd.read_parquet(workdir / f"results/data/{lang}.parquet"), k).values()]
        share[name] = sum(found) / len(found)
    assert len({share[n] for n in SYSTEMS if 0 < share[n] < 1}) >= 2, share  # an order to get right or wrong
    checks = pd.read_csv(workdir / "results/checks.csv")
    assert checks["check"].eq("passage_order").all() and checks["passed"].all(), checks.to_dict("records")
    board = pd.read_csv(workdir / "results/leaderboard.csv").set_index("model")
    by_share = sorted(share, key=lambda name: -share[name])
    distinct = [name for name in by_share if list(share.values()).count(share[name]) == 1]
    assert board.loc[distinct, "rank"].is_monotonic_increasing, (share, board["rank"].to_dict())
    assert board.loc["mock-oracle", "rank"] == 1 and board.loc["mock-closed-book", "rank"] == len(board)
    detailed = pd.read_csv(workdir / "results/leaderboard_detailed.csv").set_index("model")
    assert detailed.loc["mock-e5-1", ["generator", "passages", "retriever", "top_k"]].tolist() == [
        "mock-grounded", "retrieved", "e5-en", 1]
    retrieval = pd.read_csv(workdir / "results/retrieval/leaderboard.csv").set_index(["model", "lang"])
    assert detailed.loc["mock-e5-1", "retrieval_Recall@5"] == retrieval.loc[("e5-en", "all"), "Recall@5"]
    assert pd.isna(detailed.loc["mock-oracle", "retrieval_Recall@5"])


def test_a_new_system_on_an_existing_run_adds_only_its_own_jobs(retrieved, repo):
    workdir, config = retrieved
    config["systems"]["mock-bm25-2"] = {"generator": "mock-grounded", "retriever": "bm25", "top_k": 2}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        result = snakemake(repo, workdir, "-n", "--quiet", "rules")
    finally:
        config["systems"].pop("mock-bm25-2")
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    jobs = scheduled_jobs(result.stdout)
    # its passages, answers and features; no corpus, index or run again
    assert jobs["system_passages"] == 2 and jobs["generate_answers"] == 1, jobs
    assert not {"retrieval_corpus", "bm25_index", "encode_dense_shard", "dense_index", "retrieve",
                "retrieval_metrics", "retrieval_leaderboard"} & set(jobs), jobs


def test_a_pooled_corpus_of_four_languages_is_one_index_scored_as_each_question_names_its_passages(repo, tmp_path):
    """The demo's en, de, hi and zh corpora pooled (docids en:..., de:...), one BM25 index every
    question searches: the metrics and a system's passages name a question's own-language passages
    as its labels do (no prefix), other languages' with theirs, and InLanguage@10 is the share of
    the first 10 in the question's language, worked out here from the run."""
    languages = ["en", "de", "hi", "zh"]
    config = retrieval_config(repo, tmp_path)
    config["languages"] = languages
    config["retrieval"] = {"corpora": {"pool": {"source": "demo", "languages": languages}},
                           "retrievers": {"bm25-pool": {"kind": "bm25", "corpus": "pool"}},
                           "intervals": {"bootstrap": 200}}
    config["systems"] = {"mock-pool-5": {"generator": "mock-grounded", "retriever": "bm25-pool", "top_k": 5}}
    run_config(repo, tmp_path, config, "results/retrieval/leaderboard.csv",
               *(f"results/retrieval/passages/mock-pool-5/{lang}.parquet" for lang in languages))
    pooled = pd.read_parquet(tmp_path / "results/retrieval/corpora/pool/pooled.parquet")
    assert {d.split(":")[0] for d in pooled["docid"]} == set(languages) and pooled["docid"].is_unique
    assert (tmp_path / "results/retrieval/indexes/bm25-pool/pooled/bm25").is_dir()  # one index
    assert not (tmp_path / "results/retrieval/indexes/bm25-pool/en").exists()
    # The index job's log names each language's analysis (a language without a rule would say "no analyzer").
    log = (tmp_path / "results/logs/retrieval/indexes/bm25-pool/pooled.log").read_text(encoding="utf-8")
    assert "BM25 tokens: zh: Unicode words, lower-case, CJK character bigrams, no stemmer, stopwords kept" in log
    assert "BM25 tokens: hi: Unicode words, lower-case, Snowball hindi stemmer, stopwords kept" in log
    board = pd.read_csv(tmp_path / "results/retrieval/leaderboard.csv", keep_default_na=False, na_values=[""])
    for lang in languages:
        run = read_run(tmp_path / f"results/retrieval/runs/bm25-pool/{lang}.parquet")
        questions = pd.read_parquet(tmp_path / f"results/data/{lang}.parquet")
        relevant = questions.set_index("query_id")["relevant_docids"].map(set)
        first = run[run["rank"] <= 10]
        share = [(first[first.query_id == q].docid.str.split(":").str[0] == lang).sum() / 10 for q in questions["query_id"]]
        own = run.assign(docid=[d.split(":", 1)[1] if d.startswith(f"{lang}:") else d for d in run["docid"]])
        recall = [len(set(own[(own.query_id == q) & (own["rank"] <= 5)].docid) & relevant[q]) / len(relevant[q])
                  for q in questions["query_id"]]
        row = board[(board.model == "bm25-pool") & (board.lang == lang)].iloc[0]
        assert row["InLanguage@10"] == pytest.approx(sum(share) / len(share), rel=5e-4)  # 4 digits
        assert row["Recall@5"] == pytest.approx(sum(recall) / len(recall), rel=5e-4) and row["Recall@5"] > 0
        passages = pd.read_parquet(tmp_path / f"results/retrieval/passages/mock-pool-5/{lang}.parquet")
        for query_id, given in zip(passages["query_id"], passages["passages"]):
            expected = own[(own.query_id == query_id) & (own["rank"] <= 5)].sort_values("rank").docid.tolist()
            assert [p["docid"] for p in given] == expected
    # Chinese questions, tokenized as Chinese (bigrams), find Chinese passages first
    assert board.set_index(["model", "lang"]).loc[("bm25-pool", "zh"), "InLanguage@10"] > 0.5


def test_a_bm25_index_in_shards_retrieves_what_one_index_retrieves(repo, tmp_path):
    """The demo corpus declared 10,000 passages with BM25 jobs of 3 MB is planned in shards (a
    statistics job, a job per shard, the index listing them): its runs equal those of the same corpus
    indexed in one job, docid for docid and rank for rank, scores alike."""
    from polyrag.config.retrieval import retriever_for_language
    from polyrag.config.validate import validate_config

    config = retrieval_config(repo, tmp_path)
    config["retrieval"] = {"corpora": {"demo": {"source": "demo"}, "sized": {"source": "demo", "size": 10_000}},
                           "retrievers": {"bm25": {"kind": "bm25", "corpus": "demo"},
                                          "bm25-sharded": {"kind": "bm25", "corpus": "sized", "resources": {"mem_mb": 3}}},
                           "intervals": {"bootstrap": 200}}
    config["systems"] = {}
    shards = retriever_for_language(validate_config(config, repo / "schemas" / "config.schema.yaml"), "bm25-sharded",
                                    "en")["shards"]
    assert shards > 1
    runs = [f"results/retrieval/runs/{retriever}/{lang}.parquet" for retriever in ("bm25", "bm25-sharded")
            for lang in config["languages"]]
    result = run_config(repo, tmp_path, config, *runs)
    assert scheduled_jobs(result.stderr)["bm25_shard"] == shards * len(config["languages"])
    folder = tmp_path / "results/retrieval/indexes/bm25-sharded/en"
    assert sorted(p.name for p in (folder / "bm25_shards").iterdir()) == sorted(map(str, range(shards)))
    for lang in config["languages"]:
        one = read_run(tmp_path / f"results/retrieval/runs/bm25/{lang}.parquet")
        sharded = read_run(tmp_path / f"results/retrieval/runs/bm25-sharded/{lang}.parquet")
        assert len(one) > 10 * 12 * 0.9
        assert list(zip(sharded["query_id"], sharded["docid"], sharded["rank"])) == list(zip(one["query_id"], one["docid"], one["rank"]))
        pd.testing.assert_series_equal(sharded["score"], one["score"], rtol=1e-6)
