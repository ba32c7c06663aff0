"""The fine-tuned MARS judge on a tiny random BERT built here, on CPU (or $POLYRAG_TEST_DEVICE): it learns a toy task, keeps
the best epoch, stops early, is reproducible from the seed, and reloads (LoRA too) as a plain
classifier whose probabilities match a direct forward pass."""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is installed by `make test`")

from polyrag.mars.encoder_judge import (  # noqa: E402
    encode_pairs,
    load_transformers_judge,
    train_transformers_judge,
)

from tests.helpers.environment import ON_CUDA, TORCH_TEST_DEVICE as DEVICE  # noqa: E402
from tests.helpers.tiny_models import FIXTURE_TEXT, pair_tokenizer, sequence_classifier  # noqa: E402

GERMAN = 1  # FIXTURE_TEXT[1] is the German sentence


def toy_examples(n: int, seed: int) -> list[tuple[str, str, int]]:
    """Label 1 iff text_b is a span of the German sentence; text_a is a span of the English one.
    Any 3-word German span holds a word no other sentence has, so the task is learnable."""
    rng = random.Random(seed)
    sentences = [s.split() for s in FIXTURE_TEXT]
    examples = []
    for k in range(n):
        label = k % 2
        source = GERMAN if label else rng.choice([i for i in range(len(sentences)) if i != GERMAN])
        words = sentences[source]
        width = rng.randint(3, min(6, len(words)))
        start = rng.randint(0, len(words) - width)
        a_start = rng.randint(0, len(sentences[0]) - 4)
        examples.append((" ".join(sentences[0][a_start : a_start + 4]), " ".join(words[start : start + width]), label))
    rng.shuffle(examples)
    return examples


def settings_for(model_dir, **overrides) -> dict:
    settings = {"model": str(model_dir), "epochs": 6, "learning_rate": 3e-3, "batch_size": 8, "patience": 3,
                "max_length": 32, "device": DEVICE, "lora": None}
    return {**settings, **overrides}


def accuracy(judge, examples) -> float:
    probabilities = judge.predict_proba([(a, b) for a, b, _ in examples])
    return float(((probabilities >= 0.5).astype(int) == np.array([y for _, _, y in examples])).mean())


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Threads only slow a model this small down (badly so on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return sequence_classifier(tmp_path_factory.mktemp("tiny") / "base", {0: "no", 1: "yes"})


@pytest.fixture(scope="module")
def data():
    return toy_examples(64, seed=1), toy_examples(24, seed=2)


@pytest.fixture(scope="module")
def trained(base, data, tmp_path_factory):
    out = tmp_path_factory.mktemp("judge")
    settings = settings_for(base, patience=6)
    history = train_transformers_judge(data[0], data[1], settings, out, seed=3)
    return out, settings, history


def test_learns_the_toy_task_and_keeps_the_best_epoch(trained, data):
    out, settings, history = trained
    assert [row["epoch"] for row in history] == list(range(1, settings["epochs"] + 1))
    assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"]
    best = [row for row in history if row["best"]]
    assert len(best) == 1
    top = max(row["validation_accuracy"] for row in history)
    assert best[0]["validation_accuracy"] == top >= 0.9
    assert best[0]["epoch"] == min(row["epoch"] for row in history if row["validation_accuracy"] == top)
    assert best[0]["validation_balanced_accuracy"] >= 0.9
    assert accuracy(load_transformers_judge(out, settings), data[1]) == pytest.approx(top)


def test_saves_the_best_epoch_not_the_last(base, data, tmp_path):
    # Validation labels inverted: the better the judge learns the task, the worse it does there.
    inverted = [(a, b, 1 - y) for a, b, y in data[1]]
    settings = settings_for(base, patience=6)
    history = train_transformers_judge(data[0], inverted, settings, tmp_path, seed=3)
    assert len(history) == settings["epochs"]
    best = next(row for row in history if row["best"])
    assert history[-1]["validation_accuracy"] < best["validation_accuracy"] - 0.3
    assert accuracy(load_transformers_judge(tmp_path, settings), inverted) == pytest.approx(best["validation_accuracy"])


def test_writes_checkpoint_and_history(trained):
    out, _, history = trained
    assert (out / "model.safetensors").is_file()
    with open(out / "history.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["epoch", "train_loss", "validation_accuracy", "validation_balanced_accuracy", "best"]
    assert [int(r["epoch"]) for r in rows] == [h["epoch"] for h in history]
    assert [float(r["train_loss"]) for r in rows] == pytest.approx([h["train_loss"] for h in history])
    assert [r["best"] == "True" for r in rows] == [h["best"] for h in history]


def test_reloaded_probabilities_match_a_direct_forward_pass(trained, data):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out, settings, _ = trained
    pairs = [(a, b) for a, b, _ in data[1]]
    judge = load_transformers_judge(out, {**settings, "batch_size": 5})  # batches of a different size
    probabilities = judge.predict_proba(pairs)
    assert probabilities.shape == (len(pairs),)
    assert probabilities.std() > 0.05  # the pairs are told apart, not all given one value

    model = AutoModelForSequenceClassification.from_pretrained(out).to(DEVICE).eval()
    assert model.config.id2label == {0: "no", 1: "yes"}
    tokenizer = AutoTokenizer.from_pretrained(out)
    enc = tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation="only_second",
                    max_length=settings["max_length"], padding=True, return_tensors="pt").to(DEVICE)
    with torch.no_grad():
        direct = torch.softmax(model(**enc).logits, dim=-1)[:, 1].cpu().numpy()
    # One batch against batches of 5: CUDA's float32 kernels differ by batch shape more than CPU's.
    np.testing.assert_allclose(probabilities, direct, atol=1e-4 if ON_CUDA else 1e-5)
    assert judge.predict_proba([]).shape == (0,)


@pytest.mark.parametrize("patience", [1, 2])
def test_stops_early_when_validation_cannot_improve(base, data, tmp_path, patience):
    # A zero learning rate leaves the model, so the validation accuracy, unchanged.
    settings = settings_for(base, learning_rate=0.0, patience=patience, epochs=6)
    history = train_transformers_judge(data[0], data[1], settings, tmp_path, seed=3)
    assert len(history) == patience + 1 < settings["epochs"]
    assert len({row["validation_accuracy"] for row in history}) == 1
    assert [row["best"] for row in history] == [True] + [False] * patience
    with open(tmp_path / "history.csv", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == patience + 1


def test_same_seed_same_judge(base, data, tmp_path):
    settings = settings_for(base, epochs=2)
    pairs = [(a, b) for a, b, _ in data[1]]
    runs = {}
    for name, seed in [("first", 11), ("again", 11), ("other", 12)]:
        history = train_transformers_judge(data[0], data[1], settings, tmp_path / name, seed=seed)
        runs[name] = history, load_transformers_judge(tmp_path / name, settings).predict_proba(pairs)
    if ON_CUDA:  # reproducible up to CUDA's nondeterministic kernels (atomic adds in backward passes)
        assert [row["best"] for row in runs["first"][0]] == [row["best"] for row in runs["again"][0]]
        assert [row["train_loss"] for row in runs["first"][0]] == pytest.approx(
            [row["train_loss"] for row in runs["again"][0]], rel=1e-4)
        np.testing.assert_allclose(runs["first"][1], runs["again"][1], atol=1e-4)
    else:  # bit for bit on CPU
        assert runs["first"][0] == runs["again"][0]
        np.testing.assert_array_equal(runs["first"][1], runs["again"][1])
    assert not np.allclose(runs["first"][1], runs["other"][1])  # the seed matters


def test_lora_judge_saves_a_plain_classifier(base, data, tmp_path):
    pytest.importorskip("peft")
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    lora = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["query", "value"]}
    settings = settings_for(base, lora=lora, learning_rate=3e-2, patience=6)  # LoRA wants a larger rate
    history = train_transformers_judge(data[0], data[1], settings, tmp_path, seed=3)
    assert history[-1]["train_loss"] < 0.9 * history[0]["train_loss"]
    assert max(row["validation_accuracy"] for row in history) >= 0.75

    assert not (tmp_path / "adapter_config.json").exists()
    saved, original = load_file(tmp_path / "model.safetensors"), load_file(base / "model.safetensors")
    assert set(saved) == set(original)  # no lora_A/lora_B or peft prefixes: merged
    query, key = "bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.0.attention.self.key.weight"
    assert not torch.equal(saved[query], original[query])  # adapters merged into the targets
    assert torch.equal(saved[key], original[key])  # the rest of the encoder is frozen
    assert not torch.equal(saved["classifier.weight"], original["classifier.weight"])  # the head is trained

    model, info = AutoModelForSequenceClassification.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    best = next(row for row in history if row["best"])
    assert accuracy(load_transformers_judge(tmp_path, settings), data[1]) == pytest.approx(best["validation_accuracy"])


def test_rejects_examples_it_cannot_learn_from(base, data, tmp_path):
    train, validation = data
    settings = settings_for(base)
    with pytest.raises(ValueError, match="both classes"):
        train_transformers_judge([e for e in train if e[2] == 1], validation, settings, tmp_path, seed=0)
    with pytest.raises(ValueError, match="no training examples"):
        train_transformers_judge([], validation, settings, tmp_path, seed=0)
    with pytest.raises(ValueError, match="no validation examples"):
        train_transformers_judge(train, [], settings, tmp_path, seed=0)
    with pytest.raises(ValueError, match="must be 0 or 1"):
        train_transformers_judge(train + [("Niger", "Delta", 2)], validation, settings, tmp_path, seed=0)
    with pytest.raises(ValueError, match="at least 1"):
        train_transformers_judge(train, validation, settings_for(base, epochs=0), tmp_path, seed=0)
    assert not (tmp_path / "model.safetensors").exists()


def test_truncates_the_second_text_first():
    tokenizer = pair_tokenizer()
    first, long_second = "Mozart was born", " ".join(FIXTURE_TEXT[0].split() * 3)
    [kept] = encode_pairs(tokenizer, [(first, long_second)], max_length=12)
    assert len(kept["input_ids"]) == 12
    assert tokenizer.decode(kept["input_ids"][1:4]) == first  # the first text is whole
    # A first text that alone is too long falls back to longest_first instead of failing.
    long_first = " ".join(FIXTURE_TEXT[1].split() * 3)
    both = encode_pairs(tokenizer, [(long_first, "Mozart was born in Salzburg"), (first, long_second)], max_length=12)
    assert [len(e["input_ids"]) for e in both] == [12, 12]
    sep = tokenizer.sep_token_id
    assert all(e["input_ids"].count(sep) == 2 and e["input_ids"][-2] != sep for e in both)  # both texts kept
