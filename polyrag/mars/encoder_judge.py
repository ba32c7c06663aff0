"""The fine-tuned judge of MARS: one binary sequence-pair classifier per metric (context relevance,
answer relevance, answer faithfulness, language consistency), fine-tuned from a multilingual
encoder (e.g. ``microsoft/mdeberta-v3-base``) on (text_a, text_b, label) examples.

Training is a plain PyTorch loop so that every step is visible and, on CPU, reproducible from the
seed. The epoch with the best validation accuracy is kept (early stopping after ``patience`` epochs
without improvement) and saved as an ordinary sequence classifier: LoRA adapters, when used, are
merged into the encoder first, so loading never needs peft.

Label 1 ("yes") is the positive class; :meth:`TransformersJudge.predict_proba` returns P(yes).
"""

from __future__ import annotations

import csv
import inspect
import logging
import math
import warnings
from pathlib import Path

import numpy as np

from polyrag.errors import DataError
from polyrag.torch_runtime import resolve_device, seed_everything

logger = logging.getLogger(__name__)

ID2LABEL = {0: "no", 1: "yes"}
POSITIVE = 1
HISTORY_COLUMNS = ["epoch", "train_loss", "validation_accuracy", "validation_balanced_accuracy", "best"]
WARMUP_FRACTION = 0.1  # of all optimisation steps, then linear decay to zero


class JudgeDataError(DataError, ValueError):
    """Training or validation examples a judge cannot learn from (a ValueError for callers, and a
    PolyragError so that a Snakemake rule reports it in one line)."""


def encode_pairs(tokenizer, pairs: list[tuple[str, str]], max_length: int) -> list[dict[str, list[int]]]:
    """Unpadded token ids per pair, at most ``max_length`` long. The second text (the passage or
    answer) is cut first; only a pair whose first text alone leaves no room for it is cut
    ``longest_first``, which ``only_second`` would refuse."""
    if not pairs:
        return []
    firsts = tokenizer([a for a, _ in pairs], add_special_tokens=False)["input_ids"]
    room = max_length - tokenizer.num_special_tokens_to_add(pair=True)
    strategies = ["only_second" if len(ids) < room else "longest_first" for ids in firsts]
    encoded: list[dict] = [{} for _ in pairs]
    for strategy in ("only_second", "longest_first"):
        mine = [i for i, s in enumerate(strategies) if s == strategy]
        if not mine:
            continue
        batch = tokenizer([pairs[i][0] for i in mine], [pairs[i][1] for i in mine],
                          truncation=strategy, max_length=max_length)
        for k, i in enumerate(mine):
            encoded[i] = {key: list(values[k]) for key, values in batch.items()}
    return encoded


def collate(tokenizer, features: list[dict[str, list[int]]], device: str) -> dict:
    """Pad a batch of :func:`encode_pairs` outputs into tensors on ``device``."""
    import torch

    width = max(len(f["input_ids"]) for f in features)
    pad_values = {"input_ids": tokenizer.pad_token_id, "attention_mask": 0,
                  "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0)}
    batch = {}
    for key, pad in pad_values.items():
        if key not in features[0]:
            continue
        rows = []
        for f in features:
            padding = [pad] * (width - len(f[key]))
            rows.append(padding + f[key] if tokenizer.padding_side == "left" else f[key] + padding)
        batch[key] = torch.tensor(rows, dtype=torch.long, device=device)
    return batch


def positive_probabilities(model, tokenizer, features: list[dict], batch_size: int, device: str) -> np.ndarray:
    """P(label 1) for encoded pairs, in batches, dropout off."""
    import torch

    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(features), batch_size):
            logits = model(**collate(tokenizer, features[start : start + batch_size], device)).logits
            out.append(torch.softmax(logits.float(), dim=-1)[:, POSITIVE].cpu().numpy())
    return np.concatenate(out).astype(np.float64) if out else np.zeros(0, dtype=np.float64)


class TransformersJudge:
    """A saved judge checkpoint, ready to score (text_a, text_b) pairs."""

    def __init__(self, model, tokenizer, device: str, batch_size: int = 32, max_length: int = 512):
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length

    def predict_proba(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """P(yes) per pair, shape (n,)."""
        features = encode_pairs(self.tokenizer, list(pairs), self.max_length)
        return positive_probabilities(self.model, self.tokenizer, features, self.batch_size, self.device)


def load_transformers_judge(out_dir: str | Path, settings: dict) -> TransformersJudge:
    """The judge saved by :func:`train_transformers_judge` in ``out_dir``."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out_dir = Path(out_dir)
    if not (out_dir / "config.json").is_file():
        raise FileNotFoundError(f"no judge checkpoint in {out_dir} (config.json is missing)")
    device = resolve_device(settings.get("device", "auto"))
    tokenizer = AutoTokenizer.from_pretrained(out_dir)
    model = AutoModelForSequenceClassification.from_pretrained(out_dir)
    return TransformersJudge(model, tokenizer, device, int(settings.get("batch_size", 32)),
                             int(settings.get("max_length", 512)))


def check_inputs(train: list[tuple[str, str, int]], validation: list[tuple[str, str, int]], settings: dict) -> None:
    """Fail before loading any model on examples or settings that cannot give a judge."""
    for name, examples in (("training", train), ("validation", validation)):
        if not examples:
            raise JudgeDataError(f"the judge has no {name} examples")
        bad = sorted({repr(e[2]) for e in examples if e[2] not in (0, 1)})
        if bad:
            raise JudgeDataError(f"{name} labels must be 0 or 1, found {', '.join(bad)}")
    if int(settings["epochs"]) < 1 or int(settings["batch_size"]) < 1 or int(settings["patience"]) < 1:
        raise JudgeDataError("the judge needs epochs, batch_size and patience of at least 1, got "
                             f"{settings['epochs']}, {settings['batch_size']} and {settings['patience']}")
    classes = {int(e[2]) for e in train}
    if len(classes) < 2:
        raise JudgeDataError(f"the judge's {len(train)} training examples all have label {classes.pop()}: "
                             "a binary judge needs examples of both classes")


def load_base(settings: dict):
    """Tokenizer, model with a fresh two-label head where the checkpoint has another one, and the
    names of the modules that got no pretrained weights (they must be trained in full)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(settings["model"])
    # Two labels via id2label alone: adding num_labels=2 makes transformers warn against a
    # checkpoint's own (e.g. three NLI) labels before replacing them.
    model, info = AutoModelForSequenceClassification.from_pretrained(
        settings["model"], id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()},
        ignore_mismatched_sizes=True, output_loading_info=True)
    fresh_keys = list(info.get("missing_keys", [])) + [m[0] if isinstance(m, tuple) else m
                                                      for m in info.get("mismatched_keys", [])]
    fresh = sorted({key.rsplit(".", 1)[0] for key in fresh_keys})
    if fresh:
        logger.info("newly initialised (trained in full): %s", ", ".join(fresh))
    return tokenizer, model, fresh


def with_lora(model, lora: dict, fresh_modules: list[str]):
    """Wrap ``model`` with LoRA adapters; the classifier head and any other newly initialised
    module (e.g. DeBERTa's pooler) are trained in full, having no pretrained weights to adapt."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType.SEQ_CLS, r=int(lora["r"]), lora_alpha=lora["alpha"],
                        lora_dropout=float(lora["dropout"]), target_modules=lora.get("target_modules"),
                        modules_to_save=fresh_modules or None)
    model = get_peft_model(model, config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    logger.info("LoRA: %d of %d parameters trainable", trainable, total)
    return model


def accuracies(labels: np.ndarray, probabilities: np.ndarray) -> tuple[float, float]:
    """Accuracy and balanced accuracy at threshold 0.5 on P(yes)."""
    from sklearn.metrics import balanced_accuracy_score

    predicted = (probabilities >= 0.5).astype(int)
    with warnings.catch_warnings():  # a one-class validation set is allowed
        warnings.simplefilter("ignore")
        balanced = balanced_accuracy_score(labels, predicted)
    return float((predicted == labels).mean()), float(balanced)


def save_checkpoint(model, tokenizer, out_dir: Path) -> None:
    parameters = inspect.signature(model.save_pretrained).parameters
    options = {"safe_serialization": True} if "safe_serialization" in parameters else {}  # always on in v5
    model.save_pretrained(out_dir, **options)
    tokenizer.save_pretrained(out_dir)


def write_history(history: list[dict], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=HISTORY_COLUMNS)
        writer.writeheader()
        writer.writerows(history)


def train_transformers_judge(
    train: list[tuple[str, str, int]],
    validation: list[tuple[str, str, int]],
    settings: dict,
    out_dir: str | Path,
    seed: int,
) -> list[dict]:
    """Fine-tune ``settings["model"]`` on ``train``, keep the epoch with the best validation
    accuracy (the earlier one on ties), save it to ``out_dir`` with ``history.csv``, and return
    the history (one dict per epoch that ran)."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    check_inputs(train, validation, settings)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    seed = seed_everything(seed)
    device = resolve_device(settings["device"])
    epochs, batch_size, patience = int(settings["epochs"]), int(settings["batch_size"]), int(settings["patience"])
    max_length = int(settings["max_length"])

    tokenizer, model, fresh = load_base(settings)
    if settings.get("lora"):
        model = with_lora(model, settings["lora"], fresh)
    model.to(device)

    train_features = encode_pairs(tokenizer, [(a, b) for a, b, _ in train], max_length)
    train_labels = torch.tensor([int(y) for _, _, y in train], dtype=torch.long)
    validation_features = encode_pairs(tokenizer, [(a, b) for a, b, _ in validation], max_length)
    validation_labels = np.array([int(y) for _, _, y in validation])

    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=float(settings["learning_rate"]))
    steps = epochs * math.ceil(len(train) / batch_size)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(WARMUP_FRACTION * steps), steps)
    shuffler = torch.Generator().manual_seed(seed)
    logger.info("training on %d examples (%d validation), %d epochs at most, on %s",
                len(train), len(validation), epochs, device)

    history: list[dict] = []
    best_accuracy, best_epoch, best_state, stale = -1.0, 0, None, 0
    for epoch in range(1, epochs + 1):
        model.train()
        losses = []
        for batch in torch.randperm(len(train), generator=shuffler).split(batch_size):
            inputs = collate(tokenizer, [train_features[i] for i in batch.tolist()], device)
            logits = model(**inputs).logits
            loss = torch.nn.functional.cross_entropy(logits.float(), train_labels[batch].to(device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(loss.item() * len(batch))
        probabilities = positive_probabilities(model, tokenizer, validation_features, batch_size, device)
        accuracy, balanced = accuracies(validation_labels, probabilities)
        history.append({"epoch": epoch, "train_loss": sum(losses) / len(train), "validation_accuracy": accuracy,
                        "validation_balanced_accuracy": balanced, "best": False})
        logger.info("epoch %d: train loss %.4f, validation accuracy %.4f (balanced %.4f)",
                    epoch, history[-1]["train_loss"], accuracy, balanced)
        if accuracy > best_accuracy:
            # Only trainable parameters change, so they are all a checkpoint needs to remember.
            best_accuracy, best_epoch, stale = accuracy, epoch, 0
            best_state = {n: p.detach().to("cpu", copy=True) for n, p in model.named_parameters() if p.requires_grad}
        else:
            stale += 1
            if stale >= patience:
                logger.info("no improvement for %d epochs: stopping after epoch %d", stale, epoch)
                break

    with torch.no_grad():
        parameters = dict(model.named_parameters())
        for name, value in best_state.items():
            parameters[name].copy_(value)
    if settings.get("lora"):
        model = model.merge_and_unload()  # a plain classifier: loading needs no peft
    model.config.id2label, model.config.label2id = dict(ID2LABEL), {v: k for k, v in ID2LABEL.items()}
    save_checkpoint(model, tokenizer, out_dir)
    history[best_epoch - 1]["best"] = True
    write_history(history, out_dir / "history.csv")
    logger.info("kept epoch %d (validation accuracy %.4f) in %s", best_epoch, best_accuracy, out_dir)
    return history
