"""The shape of the DAG for clusters, from dry runs: one job per model and stage, one job per judge
on local weights, one job per pair for API judges, and the cluster-scale counts."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_cluster import CORES, job_table, miracl_retrieval_config, scaled_config  # noqa: E402

from tests.helpers.workflow import dry_run, scheduled_jobs, tiny_config  # noqa: E402


@pytest.fixture(autouse=True)
def no_model_check(monkeypatch):
    """These dry runs plan cluster configs that name hub models (and made-up ones: example/judge),
    which this machine cannot load: the check of models at start is tested in tests/config/test_models.py."""
    monkeypatch.setenv("POLYRAG_MODEL_CHECK", "off")


@pytest.mark.slow
def test_a_judge_on_local_weights_judges_every_pair_in_one_job(repo, tmp_path):
    tiny_config(repo, tmp_path, languages=["en", "de", "hi"],
                **{f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 20, 50, 80)})
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["judges"] = {"reference": {"backend": "reference"},
                        "local-judge": {"backend": "transformers", "model": "example/judge", "device": "cpu"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    output = dry_run(repo, tmp_path)
    jobs = scheduled_jobs(output)
    # 6 pairs: one job each for the reference judge (every language inside), one for the local judge.
    assert jobs["judge_pair"] == 6 and jobs["judge_pairs_local_model"] == 1
    assert jobs["generate_answers"] == 4 and jobs["deterministic_features"] == 4 and jobs["merge_features"] == 4
    block = output.split("rule judge_pairs_local_model:")[1].split("\n\n")[0]
    assert "output: " + ", ".join(f"results/judgments/local-judge/{lang}/games.parquet" for lang in ("en", "de", "hi")) in block
    assert "gpu=1" in block  # the transformers default: a GPU job on clusters
    # the fit reads that one games file
    inputs = re.findall(r"rule bradley_terry:\n    input: ([^\n]+)\n(?:    [^\n]*\n)*?    wildcards: judge=local-judge, "
                        r"lang=de\n", output)
    assert [path for path in inputs[0].split(", ") if "judgments" in path] == ["results/judgments/local-judge/de/games.parquet"]


def job_block(output, rule, wildcards):
    """The dry run's block of the job of ``rule`` with these wildcards (as Snakemake prints them)."""
    blocks = [block for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output)
              if re.match(rf"(?:local)?rule {rule}:\n", block) and f"wildcards: {wildcards}\n" in block + "\n"]
    assert len(blocks) == 1, (rule, wildcards, len(blocks))
    return blocks[0]


def job_field(block, field):
    return re.search(rf"^    {field}: ([^\n]*)$", block, re.MULTILINE).group(1).split(", ")


@pytest.mark.slow
def test_jobs_that_read_many_models_list_manifests_and_one_games_file(repo, tmp_path):
    """A readable dry run: a pair's judging job lists its two models' manifests (not the questions
    and both models' answers in every language), the statistics one games file per judge and
    language (not one per pair), and the surrogate one job per judge reading features manifests."""
    tiny_config(repo, tmp_path, languages=["en", "de", "hi"],
                features={"embedding_resources": {"gpu": 1, "threads": 2}},
                **{f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 20, 50)})
    output = dry_run(repo, tmp_path, "--cores", "4")
    jobs = scheduled_jobs(output)
    assert jobs["judge_pair"] == 3 and jobs["gather_games"] == 3 and jobs["surrogate"] == 1
    assert jobs["answer_manifest"] == jobs["feature_manifest"] == 3
    pair = job_block(output, "judge_pair", "judge=reference, model_a=mock-0, model_b=mock-20")
    assert job_field(pair, "input") == ["results/answers/mock-0/manifest.json", "results/answers/mock-20/manifest.json",
                                        "results/features/mock-0/answer_languages.parquet",
                                        "results/features/mock-20/answer_languages.parquet"]
    gather = job_block(output, "gather_games", "judge=reference, lang=de")
    assert job_field(gather, "input") == [f"results/judgments/reference/de/{a}__{b}.parquet"
                                          for a, b in [("mock-0", "mock-20"), ("mock-0", "mock-50"), ("mock-20", "mock-50")]]
    for rule in ("bradley_terry", "style_control", "judge_diagnostics"):
        inputs = job_field(job_block(output, rule, "judge=reference, lang=de"), "input")
        assert [path for path in inputs if "judgments" in path] == ["results/judgments/reference/de/games.parquet"], rule
    surrogate = job_block(output, "surrogate", "judge=reference")
    assert [p for p in job_field(surrogate, "input") if "features" in p] == [
        f"results/features/{model}/manifest.json" for model in ("mock-0", "mock-20", "mock-50")]
    assert job_field(surrogate, "output")[:3] == [f"results/arena/reference/{lang}/surrogate.csv" for lang in ("en", "de", "hi")]
    # the embedding job asks for what features.embedding_resources says (default: no GPU, 1 thread)
    embedding = job_block(output, "embedding_features", "model=mock-0")
    assert "gpu=1" in job_field(embedding, "resources") and job_field(embedding, "threads") == ["2"]


@pytest.mark.slow
def test_mirage_bench_at_20_models_and_18_languages_submits_a_few_hundred_jobs(repo, tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(scaled_config(20), sort_keys=False))
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm")))
    counts = jobs["rule"].value_counts()
    assert counts["judge_pair"] == 19 * 18 // 2 and jobs.query("rule == 'judge_pair'")["local"].all()
    assert counts["generate_answers"] == counts["nli_features"] == counts["reranker_features"] == 20
    gpu = jobs[jobs["gpu"] > 0]
    assert not gpu.duplicated(["rule", "model"]).any()  # one load per GPU model and stage
    assert (~jobs["local"]).sum() <= 500


def documented_cluster_commands(repo) -> list[str]:
    """The snakemake commands of the README's cluster section, of docs/cluster.md and of the configs'
    and profiles' headers."""
    sections = [(repo / "README.md").read_text().split("## On a cluster")[1].split("\n## ")[0],
                (repo / "docs" / "cluster.md").read_text()]
    commands = list(dict.fromkeys(line.split("  #")[0].strip() for section in sections
                                  for block in section.split("```bash")[1:]
                                  for line in block.split("```")[0].splitlines() if line.startswith("snakemake")))
    for header in [*(repo / "configs").glob("*.yaml"), *(repo / "profiles").glob("*/config.yaml")]:
        commands += [line.lstrip("# ").split("  #")[0] for line in header.read_text().splitlines()
                     if line.lstrip("# ").startswith("snakemake ")]
    # Optional parts in brackets are taken as written in the README: with mirage-bench's config.
    return [re.sub(r"\[(--configfile [^\]]*)\]", r"\1", command).replace("--configfile ...", "--configfile configs/mirage-bench.yaml")
            for command in commands]


@pytest.mark.slow
def test_the_documented_cluster_commands_work_as_written(repo):
    """Every command as users copy it, as a dry run (and the DAG command as it is) against the
    real profiles, from the checkout, on a machine without conda."""
    commands = documented_cluster_commands(repo)
    assert len(commands) >= 5 and any("--dag" in command for command in commands)
    for command in commands:
        args = shlex.split(command.split("|")[0])
        if "--dag" not in args and "-n" not in args:
            args.insert(1, "-n")
        if "slurm-conda" in command and not shutil.which("conda"):
            continue  # a conda profile needs conda even for a dry run; its envs are tested in test_conda_envs.py
        result = subprocess.run([sys.executable, "-m", *args], cwd=repo, capture_output=True, text=True)
        assert result.returncode == 0, f"{command}\n{result.stderr[-2000:]}"
        assert ("digraph" in result.stdout) if "--dag" in args else ("leaderboard" in result.stdout), command


@pytest.mark.slow
def test_a_budget_judges_in_rounds_on_the_submitting_node(repo, tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(scaled_config(20, budget=0.5), sort_keys=False))
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm")))
    counts = jobs["rule"].value_counts()
    # 19 judged models x 100 questions at 50%: 8,550 units in rounds of 190 (a 19-cycle x 10
    # questions) x 1.5^k: 190 + 285 + 428 + 642 + 962 + 1,443 + 2,165 < 8,550 <= ... + 3,247: 8 rounds
    assert "judge_pair" not in counts and counts["arena_round"] == counts["judge_round"] == 8 * 18
    assert jobs.query("rule in ['arena_round', 'judge_round']")["local"].all()
    assert (~jobs["local"]).sum() <= 500


#: MIRAGE-BENCH's own fine-tuning on a cluster: GPT-4o teaches Mistral-7B-Instruct-v0.2 on MIRACL
#: train, served by vLLM with the adapter (the paper's LoRA and trainer defaults).
CLUSTER_FINETUNE = {"name": "mistral-7b-sft", "teacher": "gpt-4o",
                    "student": {"model": "mistralai/Mistral-7B-Instruct-v0.2", "serve": "vllm"},
                    "training": {"source": "miracl", "dir": None, "questions_per_language": 1000}}


@pytest.mark.slow
def test_finetuning_on_a_cluster_is_one_job_per_stage_with_the_training_on_a_gpu(repo, tmp_path):
    config = yaml.safe_load((repo / "configs" / "mirage-bench.yaml").read_text())
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**config, "finetune": CLUSTER_FINETUNE}, sort_keys=False))
    output = dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm"))
    jobs = job_table(output)
    stages = jobs[jobs["rule"].isin(["finetune_questions", "teacher_answers", "curate_training_set", "train_student"])]
    assert stages["rule"].value_counts().to_dict() == dict.fromkeys(
        ["finetune_questions", "teacher_answers", "curate_training_set", "train_student"], 1)
    assert stages.set_index("rule")["gpu"].to_dict() == {"finetune_questions": 0, "teacher_answers": 0,
                                                          "curate_training_set": 0, "train_student": 1}
    assert stages.set_index("rule")["local"].to_dict()["curate_training_set"]
    student = jobs.query("rule == 'generate_answers' and model == 'mistral-7b-sft'")
    assert len(student) == 1 and student["gpu"].item() == 1  # vLLM with LoRA, every language in one job
    assert re.search(r"rule train_student:(?:.*\n)*?\s+output: results-mirage-bench/finetune/mistral-7b-sft/adapter/"
                     r"adapter_model.safetensors", output)


@pytest.mark.slow
def test_miracl_english_retrieval_is_64_gpu_shards_one_gather_sized_by_its_index_and_a_search_per_language(repo, tmp_path):
    """MIRACL's English corpus (32.9M passages) for BGE-M3 (1,024 dimensions) in 64 shards and an
    ivf_pq index, the datastore of four languages' questions, dry-run through profiles/slurm: every
    job asks for what polyrag.config.retrieval.index_job_resources estimates from the corpus's
    size, and the estimate is the index type's (docs/retrieval.md#the-dry-run-at-miracl-english-size)."""
    from polyrag.config.retrieval import index_job_resources
    from polyrag.config.validate import validate_config
    from polyrag.retrieval.dense import INDEX_TYPES, gather_memory_bytes
    from polyrag.retrieval.retrievers import ENCODER_BYTES, GPU_ENCODE_RATES, PASSAGE_BYTES

    config = miracl_retrieval_config("ivf_pq")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm"), *CORES))
    resolved = validate_config(config, repo / "schemas" / "config.schema.yaml")
    n, dim = 32_893_221, 1024
    expected = {job: index_job_resources(resolved, "bge-m3", "en", job) for job in ("encode", "gather", "retrieve")}

    corpus = jobs.query("rule == 'retrieval_corpus'")
    assert corpus["wildcards"].tolist() == ["corpus=miracl, corpus_lang=en"]  # one corpus: English, for every question
    encode = jobs.query("rule == 'encode_dense_shard'")
    assert len(encode) == 64 and (encode["gpu"] == 1).all() and (encode["threads"] == 4).all()
    assert sorted(int(w.split("shard=")[1]) for w in encode["wildcards"]) == list(range(64))
    assert (encode["mem_mb"] == expected["encode"]["mem_mb"]).all() and (encode["runtime"] == expected["encode"]["runtime"]).all()
    shard = -(-n // 64)  # a shard's passages: their text and vectors beside the encoder
    assert expected["encode"]["mem_mb"] * 1e6 >= ENCODER_BYTES[None] + shard * (PASSAGE_BYTES + 4 * dim)
    assert expected["encode"]["runtime"] >= 2 * shard / GPU_ENCODE_RATES["float32"] / 60  # twice the measured rate's time
    gather = jobs.query("rule == 'dense_index'")
    assert len(gather) == 1 and gather["gpu"].item() == 0
    assert gather["mem_mb"].item() == expected["gather"]["mem_mb"] == -(-gather_memory_bytes("ivf_pq", n, dim, 64) // 10**6)
    assert INDEX_TYPES["ivf_pq"].memory_bytes(n, dim) < 2.5e9 and gather["mem_mb"].item() < 16_000
    assert gather["runtime"].item() == expected["gather"]["runtime"] and gather["threads"].item() == 16
    retrieve = jobs.query("rule == 'retrieve'")
    assert sorted(retrieve["wildcards"]) == [f"retriever=bge-m3, lang={lang}" for lang in sorted(config["languages"])]
    assert (retrieve["mem_mb"] == expected["retrieve"]["mem_mb"]).all() and (retrieve["gpu"] == 0).all()
    assert len(jobs.query("rule == 'system_passages'")) == 4 and len(jobs.query("rule == 'retrieval_metrics'")) == 4
    # the same corpus in a flat index: 135 GB of vectors in the one gathering job
    flat = validate_config(miracl_retrieval_config("flat"), repo / "schemas" / "config.schema.yaml")
    assert index_job_resources(flat, "bge-m3", "en", "gather")["mem_mb"] > n * dim * 4 / 1e6 > 134_000


@pytest.mark.slow
def test_bm25_over_miracl_english_is_planned_in_shards_of_at_most_64_gb_scored_with_its_statistics(repo, tmp_path):
    """BM25 over MIRACL's English corpus (32.9M passages) with the kind's BM25 jobs (16,000 MB),
    dry-run through profiles/slurm: one statistics job, the fewest shard jobs that fit each (each
    asking for its passages' estimate, within 64 GB), an index job that lists them, and the four
    languages' searches reading it (before: the config refused the corpus unless one job asked for
    122,758 MB)."""
    from math import ceil

    from polyrag.retrieval.retrievers import bm25_memory_mb

    config = miracl_retrieval_config("ivf_pq")
    config["retrieval"]["retrievers"] = {"bm25": {"kind": "bm25", "corpus": "miracl", "corpus_language": "en"}}
    config["systems"] = {"qwen-bm25": {"generator": "qwen-2.5-7b-instruct", "retriever": "bm25", "top_k": 5}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm"), *CORES))
    n = 32_893_221
    statistics = jobs.query("rule == 'bm25_statistics'")
    assert statistics["wildcards"].tolist() == ["retriever=bm25, corpus_lang=en"] and statistics["mem_mb"].item() == 16_000
    shards = jobs.query("rule == 'bm25_shard'")
    count = len(shards)
    assert count > 1 and sorted(int(w.split("shard=")[1]) for w in shards["wildcards"]) == list(range(count))
    assert (shards["mem_mb"] == bm25_memory_mb(ceil(n / count))).all() and (shards["mem_mb"] <= 16_000).all()
    assert bm25_memory_mb(ceil(n / (count - 1))) > 16_000  # no fewer shards would fit
    index = jobs.query("rule == 'bm25_index'")
    assert len(index) == 1 and index["mem_mb"].item() <= 1000
    retrieve = jobs.query("rule == 'retrieve'")
    assert sorted(retrieve["wildcards"]) == [f"retriever=bm25, lang={lang}" for lang in sorted(config["languages"])]
    assert (retrieve["mem_mb"] <= 16_000).all() and (jobs["mem_mb"] <= 64_000).all()


@pytest.mark.slow
def test_mirage_bench_with_retrieval_has_one_index_per_retriever_and_corpus_language(repo, tmp_path):
    """MIRAGE-BENCH's 18 languages, each question searching MIRACL's corpus of its language with BM25
    and with BGE-M3 (one encoding job per million passages where MIRACL publishes the size, reranked),
    12 RAG systems of the 6 models, dry-run through profiles/slurm: one index per (retriever, corpus
    language), each language's shards sized to it, one run per (retriever, language) shared by the
    six generators, and the arena's contestants the 6 models and 12 systems."""
    from math import ceil

    from bench_cluster import mirage_retrieval_config
    from polyrag.retrieval.miracl import SIZES

    config = mirage_retrieval_config()
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm"), *CORES))
    languages = sorted(config["languages"])
    corpus_langs = {rule: sorted(jobs.query("rule == @rule")["wildcards"].str.extract(r"corpus_lang=(\w+)")[0])
                    for rule in ("retrieval_corpus", "bm25_index", "dense_index")}
    assert corpus_langs == {rule: languages for rule in corpus_langs}
    encode = jobs.query("rule == 'encode_dense_shard'")
    per_language = encode["wildcards"].str.extract(r"corpus_lang=(\w+)")[0].value_counts().to_dict()
    assert per_language == {lang: ceil(SIZES[lang] / 1_000_000) if lang in SIZES else 4 for lang in languages}
    assert per_language["en"] == 33 and (encode["gpu"] == 1).all()
    retrieve = jobs.query("rule == 'retrieve'")["wildcards"]
    assert sorted(retrieve) == sorted(f"retriever={r}, lang={lang}" for r in ("bm25", "bge-m3") for lang in languages)
    assert len(jobs.query("rule == 'rerank'")) == 18 and len(jobs.query("rule == 'system_passages'")) == 12 * 18


#: Rules whose jobs are bookkeeping (selecting, joining, gathering, tabulating, plotting, checking
#: small files): they run on the submitting node rather than wait in the queue for seconds of work.
BOOKKEEPING = ["answer_manifest", "feature_manifest", "merge_features", "gather_games", "mars_gold",
               "mars_calibration", "memerag_sentences", "meta_eval_summary", "leaderboard", "leaderboard_table",
               "judges_table", "arena_plots", "retrieval_leaderboard", "checks"]


@pytest.mark.slow
def test_bookkeeping_jobs_run_on_the_submitting_node(repo, tmp_path):
    shutil.copy(repo / "config.yaml", tmp_path / "config.yaml")  # the demo: every stage, MARS and MEMERAG too
    jobs = job_table(dry_run(repo, tmp_path, "--profile", str(repo / "profiles" / "slurm")))
    bookkeeping = jobs[jobs["rule"].isin(BOOKKEEPING)]
    assert set(bookkeeping["rule"]) == set(BOOKKEEPING)  # each is in the demo's plan
    assert bookkeeping.groupby("rule")["local"].all().to_dict() == dict.fromkeys(sorted(BOOKKEEPING), True)
