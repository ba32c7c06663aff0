"""The ledger on configs, without running anything: its counts against the design counted by hand,
the cache lookup through the LLM layer's own cache keys, prices, and the command line."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError
from polyrag.ledger import ANSWERS, JUDGE, MARS, TEACHER, Work, ledger, load_config, money, plan
from polyrag.llm.cache import ResponseCache

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "schemas" / "config.schema.yaml"
API = {"backend": "openai", "model": "gpt-4o-2024-08-06"}


def api_config(tmp_path, **changes) -> dict:
    """Three API models answering 5 demo questions in en and de, one API judge on 3 of them."""
    config = {
        "languages": ["en", "de"], "seed": 3, "cache_dir": str(tmp_path / "cache"),
        "data": {"source": "demo", "dir": str(REPO / "resources" / "demo"), "max_questions": 5, "arena_queries": 4},
        "models": {"a": dict(API), "b": dict(API), "c": {**API, "max_tokens": 100}, "mock": {"backend": "mock", "error_rate": 0.2}},
        "judges": {"gpt": {**API, "max_tokens": 300}},
        "prices": {"gpt": {"input_per_million": 2.5, "output_per_million": 10.0, "date": "2024-08-06"}},
    }
    for key, value in changes.items():
        config[key] = value if not isinstance(value, dict) or key not in config else {**config[key], **value}
    return validate_config(config, SCHEMA, workflow_dir=REPO)


def test_counts_are_the_designs_counted_by_hand(tmp_path):
    table = ledger(api_config(tmp_path), tmp_path / "results")
    rows = table.set_index(["stage", "caller", "lang"]).sort_index()
    for model in ("a", "b", "c"):  # the mock calls no model
        assert rows.loc[(ANSWERS, model), "calls"].tolist() == [5, 5]
    assert "mock" not in set(table["caller"])
    # 4 models judged -> 6 pairs x 4 arena questions x 2 orders, per language
    assert rows.loc[(JUDGE, "gpt"), "calls"].tolist() == [48, 48]
    assert (rows["cached"] == 0).all() and rows["actual_calls"].isna().all()
    # the answers' prompts are the stage's own (the demo's selection is computed): counted, not bound
    assert set(rows.loc[ANSWERS, "basis"]) == {"requests"}
    assert rows.loc[(ANSWERS, "c"), "output_tokens_max"].tolist() == [500, 500]
    # the judge's output tokens: bound by its own max_tokens; priced per million
    judge = rows.loc[(JUDGE, "gpt", "en")]
    assert judge["output_tokens"] == 48 * 300
    assert judge["usd"] == pytest.approx((judge["input_tokens"] * 2.5 + 48 * 300 * 10.0) / 1e6)


def test_a_model_answering_some_languages_is_counted_in_those_only(tmp_path):
    config = api_config(tmp_path)
    config["models"]["c"]["languages"] = ["en"]
    rows = ledger(config, tmp_path / "results").set_index(["stage", "caller", "lang"]).sort_index()
    assert rows.loc[(ANSWERS, "c"), "calls"].index.get_level_values("lang").tolist() == ["en"]
    # en: 4 models, 6 pairs; de: c is not asked, 3 models, 3 pairs (x 4 questions x 2 orders)
    assert rows.loc[(JUDGE, "gpt", "en"), "calls"] == 48
    assert rows.loc[(JUDGE, "gpt", "de"), "calls"] == 24


def test_contestants_max_questions_and_a_budget(tmp_path):
    judges = {"gpt": {**API, "contestants": ["a", "b", "c"], "max_questions": 3}}
    rows = ledger(api_config(tmp_path, judges=judges, prices={}), tmp_path / "r").set_index(["stage", "caller", "lang"]).sort_index()
    assert rows.loc[(JUDGE, "gpt"), "calls"].tolist() == [3 * 3 * 2] * 2
    # half of the 4 questions x 6 pairs (12 units), two calls a unit: at most 24 calls per language
    budget = {"budget": {"share": 0.5}, "adaptive": {"block": 2}}
    rows = ledger(api_config(tmp_path, arena=budget, prices={}), tmp_path / "r").set_index(["stage", "caller", "lang"]).sort_index()
    assert rows.loc[(JUDGE, "gpt"), "calls"].tolist() == [24, 24]
    assert set(rows.loc[(JUDGE, "gpt"), "basis"]) == {"budget bound"}


def test_hub_data_not_selected_needs_a_question_count(tmp_path):
    config = api_config(tmp_path)
    config["data"] = {**config["data"], "source": "mirage_bench", "max_questions": None}
    with pytest.raises(ConfigError, match="--questions"):
        plan(config, tmp_path / "results")
    works = plan(config, tmp_path / "results", questions=7)
    assert {w.calls for w in works if w.stage == ANSWERS} == {7}
    assert {w.basis for w in works if w.stage == ANSWERS} == {"config bound"}
    # 4 arena questions of the 7 (arena_queries), 6 pairs, both orders
    assert {w.calls for w in works if w.stage == JUDGE} == {48}


def test_cached_and_actual_calls_come_from_the_cache(tmp_path):
    config = api_config(tmp_path)
    works = [w for w in plan(config, tmp_path / "results") if w.stage == ANSWERS and w.caller == "a" and w.lang == "en"]
    request = works[0].requests[0]
    identity = "https://api.openai.com/v1/gpt-4o-2024-08-06"  # whatever the backend called itself
    cache = ResponseCache(tmp_path / "cache" / "llm" / "a.sqlite")
    cache.put(request.cache_key("openai", identity), backend="openai", model=identity, request={},
              response="an answer", tokens=1234)
    cache.put("another key", backend="openai", model=identity, request={}, response="x", tokens=5)  # not planned
    cache.close()
    rows = ledger(config, tmp_path / "results").set_index(["stage", "caller", "lang"]).sort_index()
    assert rows.loc[(ANSWERS, "a", "en"), ["cached", "actual_calls", "actual_tokens"]].tolist() == [1, 1, 1234]
    assert rows.loc[(ANSWERS, "a", "de"), ["cached", "actual_calls"]].tolist() == [0, 0]
    # output tokens: the observed completion ("an answer": 2 tokens) for every call of a's answers,
    # in place of max_tokens (the default 512); b has none observed
    assert rows.loc[(ANSWERS, "a"), "output_tokens"].tolist() == [10, 10]
    assert rows.loc[(ANSWERS, "b"), "output_tokens"].tolist() == [5 * 512] * 2
    assert pd.isna(rows.loc[(ANSWERS, "b", "en"), "actual_calls"])  # b has no cache: nothing actual yet


def test_identical_requests_are_one_call():
    from polyrag.llm.types import Request

    same = [Request(prompt="p"), Request(prompt="p"), Request(prompt="q")]
    assert Work(ANSWERS, "m", {}, "en", 10, requests=same).calls == 2


def test_prices_are_validated(tmp_path):
    with pytest.raises(ConfigError, match="prices"):
        api_config(tmp_path, prices={"gpt": {"input_per_million": 2.5, "output_per_million": 10.0}})  # no date
    with pytest.raises(ConfigError, match=r"prices\.nobody: not a model or judge"):
        ledger(api_config(tmp_path, prices={"nobody": {"gpu_hour": 2.0, "tokens_per_second": 1000, "date": "x"}}),
               tmp_path / "r")
    assert money({"gpu_hour": 3.6, "tokens_per_second": 1000, "date": "x"}, 2_000_000, 1_600_000) == pytest.approx((3.6, 1.0))
    assert money(None, 1, 1) == (None, None)


def test_mars_rows_are_upper_bounds(tmp_path):
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["cache_dir"] = str(tmp_path / "cache")
    config = validate_config(config, SCHEMA, workflow_dir=REPO)
    works = [w for w in plan(config, tmp_path / "results") if w.stage == MARS]
    # 2 pairs (en-en, de-de), 40 documents: a question each, then at most two answers each
    assert sorted(w.lang for w in works) == ["de-de", "en-en"] and {w.calls for w in works} == {120}


def test_command_line_writes_the_table_and_prints_the_total(tmp_path):
    config = copy.deepcopy(yaml.safe_load((REPO / "config.yaml").read_text()))
    config["cache_dir"] = str(tmp_path / "cache")
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    result = subprocess.run([sys.executable, "-m", "polyrag.ledger", "--configfile", str(tmp_path / "config.yaml"),
                             "--output", str(tmp_path / "ledger.csv"), "--total"],
                            capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert result.returncode == 0, result.stderr[-2000:]
    table = pd.read_csv(tmp_path / "ledger.csv")
    total = int(table["calls"].sum())
    assert result.stdout.strip().splitlines()[-1].startswith(f"ledger: {total:,} model calls (0 cached)")
    assert load_config(tmp_path / "config.yaml", REPO)["languages"] == config["languages"]


def test_a_teacher_that_is_a_language_model_is_counted(tmp_path):
    config = yaml.safe_load((REPO / "configs" / "demo-full.yaml").read_text())  # the demo with fine-tuning
    config["cache_dir"] = str(tmp_path / "cache")
    assert not [w for w in plan(validate_config(copy.deepcopy(config), SCHEMA, workflow_dir=REPO), tmp_path / "r")
                if w.stage == TEACHER]  # the demo's teacher is a mock system: no model call
    config["models"]["gpt"] = {**API, "judged": False}
    config["finetune"]["teacher"] = "gpt"
    works = [w for w in plan(validate_config(config, SCHEMA, workflow_dir=REPO), tmp_path / "r") if w.stage == TEACHER]
    # resources/demo-train: 4 training questions per demo language, each with its relevant passage
    assert [(w.lang, w.calls, w.caller) for w in works] == [(lang, 4, "gpt") for lang in ("en", "de", "hi", "zh")]
    assert all(request.max_tokens == 256 for w in works for request in w.requests)  # the teacher's generation settings
