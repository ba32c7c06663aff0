"""One table of LLM backends (polyrag.llm.backends): the schema names the same backends, the factory,
the judge kinds and the student read it, and reading it imports no engine."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import yaml

from polyrag.errors import ConfigError
from polyrag.finetune.student import SERVING_KEYS, student_entry
from polyrag.judge.kinds import KINDS
from polyrag.llm.backends import LLM_BACKENDS
from polyrag.llm.base import Backend
from polyrag.llm.factory import make_backend
from polyrag.systems.answer_files import system_answers


@pytest.fixture(scope="module")
def schema(repo):
    return yaml.safe_load((repo / "schemas" / "config.schema.yaml").read_text())


def test_the_schema_names_the_tables_backends(schema):
    defs = schema["$defs"]
    # models: every backend, each with its own definition and a branch that applies it
    assert set(defs["model"]["properties"]["backend"]["enum"]) == set(LLM_BACKENDS)
    branches = {branch["if"]["properties"]["backend"]["const"]: branch["then"]["$ref"] for branch in defs["model"]["allOf"]}
    assert branches == {name: f"#/$defs/{name}" for name in LLM_BACKENDS}
    assert all(defs[name]["properties"]["backend"] == {"const": name} for name in LLM_BACKENDS)
    # judges: the backends that judge, both where the schema lists the kinds and where it applies a model's options
    judging = {name for name in LLM_BACKENDS if LLM_BACKENDS[name].judges}
    assert set(defs["judge"]["properties"]["backend"]["enum"]) & set(LLM_BACKENDS) == judging
    [model_branch] = [branch for branch in defs["judge"]["allOf"] if branch["then"] == {"$ref": "#/$defs/model"}]
    assert set(model_branch["if"]["properties"]["backend"]["enum"]) == judging
    # the fine-tuned student: served on the backends that take an adapter
    serve_enum = schema["properties"]["finetune"]["properties"]["student"]["properties"]["serve"]["enum"]
    adapters = {name for name in LLM_BACKENDS if LLM_BACKENDS[name].adapters}
    assert set(serve_enum) == adapters == set(SERVING_KEYS)


def test_the_judge_kinds_come_from_the_table():
    for name in LLM_BACKENDS:
        spec = LLM_BACKENDS[name]
        if not spec.judges:
            assert name not in KINDS
            continue
        kind = KINDS[name]
        assert kind.sends_prompts and kind.resources == spec.resources
        assert kind.scheduling == ("local_weights" if spec.local_weights else "per_pair")


def test_every_entry_names_its_class_and_the_parameters_it_is_given():
    for name in LLM_BACKENDS:
        spec = LLM_BACKENDS[name]
        if not spec.language_model:  # a system read from files: the entry names its reader, nothing to open
            assert spec.load() is system_answers and not spec.judges and not spec.adapters and spec.context == {}
            assert spec.resources["gpu"] == 0 and spec.resources["threads"] == 1
            with pytest.raises(ConfigError, match=f"backend {name}\\): its answers are read from files"):
                make_backend("m", {"backend": name, "answers": "m/{lang}.jsonl"}, cache_dir="unused", seed=0)
            continue
        cls = spec.load()
        assert issubclass(cls, Backend) and cls.name == name
        assert set(spec.context.values()) <= set(inspect.signature(cls).parameters)


def test_an_unknown_backend_fails_listing_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown LLM backend 'claude' \(known: openai, vllm, transformers, llama_cpp, mock, file\)"):
        make_backend("m", {"backend": "claude"}, cache_dir="unused", seed=0)
    with pytest.raises(ConfigError, match="openai serves no LoRA adapter"):
        student_entry({"model": "m", "serve": "openai"}, None)


def test_reading_the_table_imports_no_engine():
    code = ("import sys, polyrag.llm.backends, polyrag.config.queries; "
            "print(sorted(m for m in ('torch', 'vllm', 'llama_cpp', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
