"""results_dir (polyrag/config/outputs.py): every path the rules write is built under the config's
results folder; the paths the plan builds (a system's passage file, the student's adapter) follow
it; the commands that read a finished run find it from the config files."""

from __future__ import annotations

import copy

import pytest
import yaml

from polyrag.config.outputs import (benchmark_path, configured_results_dir, log_path, main, results_dir,
                                    results_path)
from polyrag.config.params import FileDigests, source_digests
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError


@pytest.fixture
def demo(repo, monkeypatch):
    monkeypatch.chdir(repo)
    demo = {**yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text()), "results_dir": "results"}  # the student too
    demo["retrieval"] = {"corpora": {"demo": {"source": "demo"}},
                         "retrievers": {"bm25": {"kind": "bm25", "corpus": "demo"}}}
    demo["systems"] = {"mock-bm25-2": {"generator": "mock-recall-83", "retriever": "bm25", "top_k": 2}}
    return demo


def check(config, repo):
    return validate_config(copy.deepcopy(config), repo / "schemas" / "config.schema.yaml", source="my.yaml")


def test_paths_are_built_under_the_folder_as_written_once_normalised():
    assert results_dir({}) == "results"  # the default, the demo's
    assert results_path({"results_dir": "./runs//mine/"}, "data/{lang}.parquet") == "runs/mine/data/{lang}.parquet"
    assert log_path({"results_dir": "results-x"}, "data/{lang}.log") == "results-x/logs/data/{lang}.log"
    assert benchmark_path({"results_dir": "/scratch/r"}, "data/{lang}.tsv") == "/scratch/r/benchmarks/data/{lang}.tsv"


def test_the_demo_keeps_results_and_the_plan_builds_its_paths_in_the_configs_folder(demo, repo):
    assert check(demo, repo)["results_dir"] == "results"
    config = check({**demo, "results_dir": "results-mine"}, repo)
    assert config["results_dir"] == "results-mine"  # as written
    assert config["models"]["mock-bm25-2"]["passages"]["file"] == "results-mine/retrieval/passages/mock-bm25-2/{lang}.parquet"
    student = config["finetune"]["name"]
    assert config["models"][student]["adapter"] == f"results-mine/finetune/{student}/adapter"


@pytest.mark.parametrize(("folder", "message"), [
    ("results-{lang}", "'results-{lang}' holds {lang}; it takes no placeholder, and any other brace is a Snakemake "
                       "wildcard"),
    (".", "'.' is the working directory (or the root) itself; name a folder of this config's own, such as results-NAME"),
    ("./", "'./' is the working directory (or the root) itself"),
    ("", "'' should be non-empty")])
def test_a_folder_with_a_wildcard_or_the_working_directory_itself_is_refused(demo, repo, folder, message):
    with pytest.raises(ConfigError) as error:
        check({**demo, "results_dir": folder}, repo)
    assert str(error.value).startswith(f"my.yaml: results_dir: {message}")


def test_the_folder_of_a_run_is_the_last_config_file_that_names_it(repo, tmp_path):
    assert configured_results_dir([repo / "config.yaml"]) == "results"
    assert configured_results_dir([repo / "configs" / "mirage-bench.yaml"]) == "results-mirage-bench"
    assert configured_results_dir([repo / "config.yaml", repo / "configs" / "demo-budget.yaml"]) == "results-demo-budget"
    (tmp_path / "mine.yaml").write_text("models: {}\n")  # names none: the earlier file's stays
    assert configured_results_dir([repo / "configs" / "xquad-mars.yaml", tmp_path / "mine.yaml"]) == "results-xquad-mars"
    assert configured_results_dir([]) == "results"
    assert main([str(repo / "configs" / "mirage-bench.yaml")]) == "results-mirage-bench"


def test_every_config_in_the_repository_names_a_folder_of_its_own(repo):
    """config.yaml keeps results/ (the README's paths); each config beside it names a sibling."""
    folders = {path.name: configured_results_dir([repo / "config.yaml", path])
               for path in sorted((repo / "configs").glob("*.yaml"))}
    assert len(set(folders.values())) == len(folders) and "results" not in folders.values(), folders
    assert all("/" not in folder for folder in folders.values())  # siblings, never nested in another's


@pytest.mark.parametrize("folder", ["runs/mine", "/abs"])
def test_files_in_the_results_folder_are_never_digested_as_user_files(tmp_path, folder):
    """A job's params hold the digests of the files it reads that no rule writes; a results folder
    nested or absolute still counts as written by the workflow (its files may not exist yet)."""
    root = folder if folder.startswith("runs") else str(tmp_path / "elsewhere" / "results")
    (tmp_path / "corp").mkdir()
    (tmp_path / "corp" / "en.jsonl").write_text("{}")
    found = source_digests([str(tmp_path / "corp" / "en.jsonl"), f"{root}/data/en.parquet"], {root},
                           FileDigests(None), tmp_path)
    assert list(found) == ["corp/en.jsonl"]
