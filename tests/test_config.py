"""Config validation: defaults filled, and every kind of bad input named by file and key."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from polyrag.config.queries import (generation_settings, judge_contestants, judge_pairs, judging_settings, model_resources,
                                    wrong_language_source)
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError


@pytest.fixture
def demo_config(repo):
    with open(repo / "config.yaml") as handle:
        return yaml.safe_load(handle)


def check(config, repo, source="my.yaml"):
    return validate_config(config, repo / "schemas" / "config.schema.yaml", source=source)


def test_demo_config_is_valid_and_gets_defaults(demo_config, repo, monkeypatch):
    monkeypatch.chdir(repo)
    config = check(demo_config, repo)
    assert config["data"]["mirage_bench"]["dataset"] == "nthakur/mirage-bench"
    assert config["data"]["miracl"]["subsample"] == {"ar": 1501}
    assert config["generation"]["max_failure_fraction"] == 0.05
    assert config["cache_dir"] == ".cache/polyrag"
    mock = config["models"]["mock-20"]
    assert mock["judge"] is True and mock["wrong_language_from"] is None
    assert wrong_language_source(mock, "en", config["languages"]) == "de"
    assert wrong_language_source(mock, "hi", config["languages"]) == "en"
    assert wrong_language_source(mock, "de-en", ["de", "de-en", "en-de"]) == "en-de"
    assert generation_settings(config, "gemma-270m")["max_tokens"] == 64  # model override
    assert generation_settings(config, "mock-20")["max_tokens"] == 256  # global value
    assert model_resources(config["models"]["gemma-270m"]) == {"gpu": 0, "mem_mb": 4000, "runtime": 240, "threads": 2}
    # The Gemma judge: its own sampling over judging:'s, on three contestants; the panel on the pairs
    # both its members judge.
    gemma = judging_settings(config, "gemma-judge")
    assert gemma["max_tokens"] == 2 and gemma["response_prefix"].endswith("[[") and gemma["max_questions"] == 2
    assert judging_settings(config, "reference")["max_tokens"] == 1024 and judging_settings(config, "reference")["stop"] == []
    assert judge_pairs(config, "gemma-judge") == [("gemma-270m", "mock-50"), ("gemma-270m", "mock-perfect"),
                                                   ("mock-50", "mock-perfect")]
    # The fine-tuned student and its control join the configured models (finetune:, added by validation).
    assert "gemma-270m-sft" in config["models"] and "gemma-270m-sft-base" in config["models"]
    assert judge_contestants(config, "panel") == ["gemma-270m", "mock-50", "mock-perfect"]
    assert judge_pairs(config, "panel") == judge_pairs(config, "gemma-judge")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c.update(languagez=["en"]), "unknown key languagez"),
        (lambda c: c["data"].update(sourc="demo"), "unknown key data.sourc"),
        (lambda c: c["models"]["mock-20"].update(eror_rate=0.1), "unknown key models.mock-20.eror_rate"),
        (lambda c: c["data"].update(arena_queries="many"), "data.arena_queries: 'many' is not of type 'integer'"),
        (lambda c: c["models"]["mock-20"].update(error_rate=1.5), "models.mock-20.error_rate: 1.5 is greater than"),
        (lambda c: c["models"].update(x={"backend": "vlm", "model": "m"}), "models.x.backend: 'vlm' is not one of"),
        (lambda c: c["models"].update({"a__b": {"backend": "mock", "error_rate": 0}}), "models.a__b: invalid model name"),
        (lambda c: c["models"].update({"-a": {"backend": "mock", "error_rate": 0}}), "models.-a: invalid model name"),
        (lambda c: c["models"].update(x={"backend": "openai"}), "models.x: 'model' is a required property"),
        (lambda c: c.update(languages=["en", "xx-yy-zz"]), "languages.1"),
        (lambda c: c.update(languages=["en", "de-en"]), "only data.source: xquad supports"),
        (lambda c: c.update(languages=["en", "sw"]), "no demo data for ['sw']"),
        (lambda c: c["models"]["mock-20"].update(wrong_language_from=["fr", "it"]), "models.mock-20.wrong_language_from"),
        (lambda c: c.update(languages=["hi"]), "models.mock-perfect: the wrong_language corruption needs a language"),
        (lambda c: c.update(features={"llm": {"judge": "reference"}}), "features.llm.judge: 'reference' is not an LLM judge"),
        (lambda c: c["judges"].update(x={"backend": "reference", "tie_margin": -1}), "judges.x.tie_margin: -1 is less than"),
        (lambda c: c["judges"]["gemma-judge"].update(contestants=["gemma-270m", "gpt-5"]),
         "judges.gemma-judge.contestants: ['gpt-5'] are not models with judge: true"),
        (lambda c: c["judges"]["gemma-judge"].update(max_questions=0), "judges.gemma-judge.max_questions: 0 is less than"),
        (lambda c: c["models"]["mock-20"].update(contestants=["mock-50", "mock-80"]),
         "models.mock-20.contestants: only a judge under judges: takes contestants"),
        (lambda c: c["judges"]["panel"].update(members=["reference", "gpt-judge"]),
         "judges.panel.members: 'gpt-judge' is not a judge under judges:"),
        (lambda c: c["judges"].update(jury={"backend": "panel", "members": ["panel", "reference"]}),
         "judges.jury.members: 'panel' is a panel"),
        (lambda c: c["judges"]["panel"].update(members=["reference"]), "judges.panel.members: ['reference'] is too short"),
        (lambda c: c["judges"].update(other={"backend": "reference", "contestants": ["mock-perfect", "mock-20"]}) or
         c["judges"]["panel"].update(members=["gemma-judge", "other"]),
         "judges.panel.members: no model pair is judged by every member"),
        (lambda c: c["judges"]["panel"].update(family="gemma"), "unknown key judges.panel.family"),
        (lambda c: c.update(features={"llm": {"judge": "panel"}}), "features.llm.judge: 'panel' is not an LLM judge"),
    ],
)
def test_bad_config_names_file_and_key(demo_config, repo, monkeypatch, edit, expected):
    monkeypatch.chdir(repo)
    config = copy.deepcopy(demo_config)
    edit(config)
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    message = str(error.value)
    assert message.startswith("my.yaml: ")
    assert expected in message
    assert "\n" not in message


def test_snakemake_stops_before_any_job_on_bad_config(repo, tmp_path, demo_config):
    config = copy.deepcopy(demo_config)
    config["models"]["mock-20"]["backend"] = "gpt"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(path)],
        cwd=repo, capture_output=True, text=True,
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"invalid config: {path}: models.mock-20.backend: 'gpt' is not one of" in output
    assert "Job stats" not in output


def test_shipped_data_is_found_from_any_working_directory(demo_config, repo, tmp_path, monkeypatch):
    """`snakemake --directory elsewhere` runs in a folder without resources/: the demo's data is read
    from the workflow's folder; a relative path that exists in the working directory wins."""
    monkeypatch.chdir(tmp_path)
    for variable in ("POLYRAG_MEMERAG_DIR", "POLYRAG_XQUAD_DIR"):
        monkeypatch.delenv(variable, raising=False)
    config = check(copy.deepcopy(demo_config), repo)
    assert config["data"]["dir"] == str(repo / "resources" / "demo")
    assert config["meta_eval"]["dir"] == str(repo / "resources" / "memerag")
    assert config["mars"]["gold"]["dir"] == str(repo / "resources" / "xquad")
    (tmp_path / "resources" / "memerag").mkdir(parents=True)
    assert check(copy.deepcopy(demo_config), repo)["meta_eval"]["dir"] == "resources/memerag"


def test_snakemake_dry_run_with_another_working_directory(repo, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "-s", str(repo / "Snakefile"),
         "--directory", str(tmp_path), "--configfile", str(repo / "config.yaml")],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "rule select_questions" in result.stdout


def test_one_variable_points_every_xquad_stage_at_local_files(demo_config, repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    monkeypatch.setenv("POLYRAG_XQUAD_DIR", str(tmp_path))
    config = copy.deepcopy(demo_config)
    config.update(languages=["en", "de"], data={"source": "xquad", "max_questions": 20})
    del config["mars"]["gold"]
    config = check(config, repo)
    assert config["data"]["dir"] == config["mars"]["gold"]["dir"] == str(tmp_path)


def test_xquad_downloads_are_pinned_by_default(demo_config, repo, monkeypatch):
    import polyrag.data.xquad as xquad

    monkeypatch.chdir(repo)
    config = copy.deepcopy(demo_config)
    config.update(languages=["en", "de"], data={"source": "xquad", "max_questions": 20})
    config = check(config, repo)
    urls = []
    monkeypatch.setattr(xquad, "cached_download", lambda url, cache_dir, local_key: urls.append(url))
    for revision in (config["data"]["xquad"]["revision"], config["mars"]["gold"]["revision"]):
        xquad.xquad_file("en", None, revision, "unused")
    assert urls == [f"https://github.com/google-deepmind/xquad/raw/{xquad.XQUAD_COMMIT}/xquad.en.json"] * 2


def test_xquad_evaluating_every_question_leaves_mars_no_gold_data(demo_config, repo, monkeypatch):
    monkeypatch.chdir(repo)
    config = copy.deepcopy(demo_config)
    config.update(languages=["en", "de"], data={"source": "xquad"})
    with pytest.raises(ConfigError, match=r"my.yaml: data.max_questions: null evaluates every XQuAD question"):
        check(config, repo)


def test_a_retry_asks_for_more_runtime_and_the_rest_stays():
    """SLURM kills a job at its time limit; the retry (attempt 2) resumes from the LLM cache and
    asks for twice the runtime, with the same GPUs, memory and threads."""
    entry = {"backend": "vllm", "resources": {"runtime": 240}}
    first, second = model_resources(entry), model_resources(entry, attempt=2)
    assert (first["runtime"], second["runtime"]) == (240, 480)
    assert {k: v for k, v in second.items() if k != "runtime"} == {k: v for k, v in first.items() if k != "runtime"}
