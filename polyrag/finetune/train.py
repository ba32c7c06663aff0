"""LoRA fine-tuning of the student on curated examples with ``trl``'s ``SFTTrainer``.

Each example is encoded exactly as generation encodes the student's prompt
(:func:`polyrag.llm.transformers_backend.prompt_ids`), followed by the teacher's answer tokenised on
its own and the EOS token, so that the model learns to stop; the loss covers the answer only.
Examples longer than ``max_length`` are dropped and counted rather than truncated, since cutting
would remove the answer. The defaults are MIRAGE-BENCH's (appendix C); ``batch_size`` is the
effective batch, reached by gradient accumulation over ``per_device_batch_size`` examples.

A seeded share of the curated questions (``heldout_share``; every language of a held-out question,
since the demo's questions are parallel across languages) is kept out of training, and at the end
of every epoch the loss is evaluated on it and on the training examples alike, with the same
weights and no dropout: a held-out loss that stops falling while the training loss falls is
memorisation, which the training loss alone cannot show.

Writes the adapter (``adapter_model.safetensors``, ``adapter_config.json``), ``training.json``
(examples used, held out and dropped, steps, time, examples per second), the loss history CSV
(every optimizer step) and the per-epoch CSV (``EPOCH_COLUMNS``).
"""

from __future__ import annotations

import csv
import json
import logging
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from polyrag.errors import ConfigError, DataError
from polyrag.llm.transformers_backend import prompt_ids
from polyrag.llm.types import Request
from polyrag.torch_runtime import resolve_device, seed_everything
from polyrag.seeds import rng_for

log = logging.getLogger(__name__)

TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PAPER_SETTINGS = {
    "lora": {"r": 16, "alpha": 16, "dropout": 0.05, "target_modules": TARGET_MODULES},
    "learning_rate": 2e-4,
    "batch_size": 32,
    "per_device_batch_size": 4,
    "epochs": 1,
    "max_length": 6144,
    "gradient_checkpointing": True,  # 6144-token sequences of a 7B model; off on CPU for small models
    "device": "auto",
    "heldout_share": 0.0,
}
HISTORY_COLUMNS = ["step", "epoch", "loss", "learning_rate", "grad_norm", "mean_token_accuracy", "num_tokens"]
EPOCH_COLUMNS = ["epoch", "step", "train_loss", "heldout_loss"]


def lora_targets(model, wanted: list[str]) -> list[str]:
    """The wanted module names that are linear layers of ``model`` (Gemma and Llama have all seven;
    GPT-2-style models have none of them)."""
    import torch

    present = {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)}
    chosen = [name for name in wanted if name in present]
    if not chosen:
        raise ConfigError(f"finetune.lora.target_modules: none of {wanted} is a linear layer of the student "
                          f"(its linear layers: {sorted(present)})")
    return chosen


def encode_examples(tokenizer, mode: str, examples: list[dict], max_length: int) -> tuple[list[dict], int]:
    """``input_ids`` and ``completion_mask`` per example, and how many were longer than ``max_length``."""
    if tokenizer.eos_token_id is None:
        raise ConfigError("finetune.student: the tokenizer has no EOS token, so the student could not learn to stop")
    features, too_long = [], 0
    for example in examples:
        request = Request(messages=example.get("messages"), prompt=example.get("prompt"))
        prompt = prompt_ids(tokenizer, mode, request)
        completion = tokenizer(example["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        if len(prompt) + len(completion) > max_length:
            too_long += 1
            continue
        features.append({"input_ids": prompt + completion, "completion_mask": [0] * len(prompt) + [1] * len(completion)})
    return features, too_long


def check_settings(settings: dict) -> None:
    batch, per_device = int(settings["batch_size"]), int(settings["per_device_batch_size"])
    if batch < 1 or per_device < 1 or batch % min(per_device, batch):
        raise ConfigError(f"finetune.trainer.batch_size ({batch}) must be a positive multiple of "
                          f"finetune.trainer.per_device_batch_size ({per_device})")


def split_heldout(examples: list[dict], share: float, seed: int) -> tuple[list[dict], list[dict]]:
    """(training, held-out) examples: a seeded ``share`` of the questions (``query_id``), at least
    one when the share is positive, held out with all their languages; training keeps one at least."""
    questions = sorted({example["query_id"] for example in examples})
    count = min(max(1, round(share * len(questions))), len(questions) - 1) if share > 0 else 0
    heldout = set(rng_for(seed, "sft-heldout").choice(questions, size=count, replace=False).tolist()) if count else set()
    return ([e for e in examples if e["query_id"] not in heldout], [e for e in examples if e["query_id"] in heldout])


def loss_history(log_history: list[dict]) -> list[dict]:
    return [{column: entry.get(column) for column in HISTORY_COLUMNS} for entry in log_history if "loss" in entry]


def epoch_losses(log_history: list[dict]) -> list[dict]:
    """One row per epoch end: the loss on the training examples and on the held-out ones, both
    evaluated with the weights of that moment (the trainer logs the two evaluations apart)."""
    rows: dict[float, dict] = {}
    for entry in log_history:
        for name, column in (("eval_train_loss", "train_loss"), ("eval_heldout_loss", "heldout_loss")):
            if name in entry:
                rows.setdefault(entry["step"], {"epoch": entry["epoch"], "step": entry["step"]})[column] = entry[name]
    return list(rows.values())


def write_rows(rows: list[dict], columns: list[str], path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


@contextmanager
def answer_positions_only(device: str):
    """Score only the answer's positions through the output layer on CPU too.

    trl's fused output layer scores just the positions that have a label on CUDA/XPU, but every
    position elsewhere, to keep tile shapes fixed for graph compilers (Neuron). Eager PyTorch on CPU
    has no such constraint, and the loss is the same; skipping the prompt's positions saves most of
    the cost of Gemma's 262k-token output layer (prompts are ~10x longer than answers)."""
    import trl.trainer.utils as trl_utils

    original = getattr(trl_utils, "_use_triton", None)
    if original is None or device != "cpu":
        yield
        return
    trl_utils._use_triton = lambda _device: True  # read only for this choice; the kernels check their own
    try:
        yield
    finally:
        trl_utils._use_triton = original


def build_trainer(base: str, features: list[dict], settings: dict, seed: int, output_dir: str, tokenizer,
                  heldout: list[dict] | None = None):
    """The ``SFTTrainer`` for ``features`` (seeded; LoRA on the base loaded from ``base``); with
    ``heldout`` features, both sets are evaluated at the end of every epoch."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    device = resolve_device(settings["device"])
    on_gpu = device.startswith("cuda")
    bf16 = on_gpu and torch.cuda.is_bf16_supported()
    seed_everything(seed)  # the LoRA matrices are initialised from torch's generator
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16 if bf16 else torch.float32)
    lora = settings["lora"]
    peft_config = LoraConfig(task_type="CAUSAL_LM", r=int(lora["r"]), lora_alpha=lora["alpha"],
                             lora_dropout=float(lora["dropout"]),
                             target_modules=lora_targets(model, list(lora["target_modules"])))
    batch = int(settings["batch_size"])
    per_device = min(int(settings["per_device_batch_size"]), batch)
    # Recent transformers 5 releases call it activation_checkpointing (the old name is deprecated);
    # earlier 5.x releases, as a GPU machine's image may carry (5.17), know only gradient_checkpointing.
    checkpointing = ("activation_checkpointing" if "activation_checkpointing" in SFTConfig.__dataclass_fields__
                     else "gradient_checkpointing")
    args = SFTConfig(
        output_dir=output_dir,
        learning_rate=float(settings["learning_rate"]),
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=batch // per_device,
        num_train_epochs=float(settings["epochs"]),
        max_length=int(settings["max_length"]),
        completion_only_loss=True,
        **{checkpointing: bool(settings["gradient_checkpointing"])},
        bf16=bf16,
        use_cpu=not on_gpu,
        seed=seed,
        data_seed=seed,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        eval_strategy="epoch" if heldout else "no",
        per_device_eval_batch_size=1,  # the loss is then the mean over examples of each one's token mean
    )
    evaluation = {"train": Dataset.from_list(features), "heldout": Dataset.from_list(heldout)} if heldout else None
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(features), eval_dataset=evaluation,
                         processing_class=tokenizer, peft_config=peft_config)
    trainer.remove_callback(PrinterCallback)  # without tqdm it prints every step; train_lora logs them
    return trainer


def train_lora(examples: list[dict], settings: dict, base: str, out_dir: str | Path, history_path: str | Path,
               seed: int, mode: str = "chat", epoch_path: str | Path | None = None):
    """Fine-tune ``base`` (a Hub id or folder, see :func:`polyrag.finetune.student.base_checkpoint`) on
    curated ``examples`` less the held-out questions; ``mode`` is the student's prompt mode (its
    model entry's). Returns the summary written to ``out_dir/training.json`` and the trained PEFT
    model; the per-epoch losses go to ``epoch_path`` (default: beside ``history_path``)."""
    from transformers import AutoTokenizer

    settings = {**PAPER_SETTINGS, **settings, "lora": {**PAPER_SETTINGS["lora"], **settings.get("lora", {})}}
    check_settings(settings)
    seed = seed_everything(seed)
    out_dir = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    training, heldout_examples = split_heldout(examples, float(settings["heldout_share"]), seed)
    features, too_long = encode_examples(tokenizer, mode, training, int(settings["max_length"]))
    heldout, heldout_too_long = encode_examples(tokenizer, mode, heldout_examples, int(settings["max_length"]))
    if not features:
        raise DataError(f"no training examples fit finetune.trainer.max_length ({settings['max_length']} tokens): "
                        f"{too_long} of {len(training)} are longer")
    log.info("%d training examples, %d held out (%d longer than %d tokens dropped)", len(features), len(heldout),
             too_long + heldout_too_long, settings["max_length"])
    with tempfile.TemporaryDirectory(prefix="polyrag-sft-") as scratch:
        trainer = build_trainer(base, features, settings, seed, scratch, tokenizer, heldout)
        start, cpu_start = time.perf_counter(), time.process_time()
        with answer_positions_only(trainer.args.device.type):
            trainer.train()
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    out_dir.mkdir(parents=True, exist_ok=True)
    trainer.model.save_pretrained(out_dir)  # the adapter only, as safetensors
    history = loss_history(trainer.state.log_history)
    write_rows(history, HISTORY_COLUMNS, history_path)
    epochs = epoch_losses(trainer.state.log_history)
    write_rows(epochs, EPOCH_COLUMNS, epoch_path or Path(history_path).with_name("epoch_loss.csv"))
    tokens = sum(len(f["input_ids"]) for f in features) * float(settings["epochs"])
    summary = {
        "examples": len(features),
        "heldout_examples": len(heldout),
        "heldout_questions": sorted({e["query_id"] for e in heldout_examples}),
        "dropped_too_long": too_long + heldout_too_long,
        "optimizer_steps": trainer.state.global_step,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu_seconds, 3),  # all threads of this process (their spin-waits included)
        "examples_per_second": len(features) * float(settings["epochs"]) / seconds,
        "tokens_per_second": tokens / seconds,
        "trainable_parameters": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
        "device": str(trainer.args.device),
        "seed": seed,
        "settings": settings,
    }
    (out_dir / "training.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for row in history:
        log.info("step %s: loss %.4f", row["step"], row["loss"])
    for row in epochs:
        log.info("epoch %.0f: loss on the training examples %.4f, on the held-out questions %.4f", row["epoch"],
                 row["train_loss"], row["heldout_loss"])
    return summary, trainer.model
