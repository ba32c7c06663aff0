"""Throughput of polyrag's own torch code paths on a GPU at the production models' shapes, printed as
tables and written to a CSV.

The weights are random, built here from each production model's published config (no hub access:
throughput does not depend on the weights' values), saved with a word-level tokenizer trained on
synthetic text to a temporary folder, and loaded by polyrag's own classes, so that what is timed is
the code the workflow runs:

a. NLI pair classification (``polyrag.features.support.NLIScorer``), mDeBERTa-v3-base shape, float32 and
   bfloat16;
b. reranking (``polyrag.features.reranker.Reranker``, sentence-transformers' CrossEncoder),
   bge-reranker-v2-m3 shape (XLM-RoBERTa large), float32 and bfloat16;
c. MARS encoder-judge training (``polyrag.mars.encoder_judge.train_transformers_judge``),
   mDeBERTa-v3-base shape, full fine-tuning in float32 as the code does: training examples per
   second of each epoch, timed from the judge's own log lines, so an epoch also holds its validation
   pass and the copy of the best weights to the CPU (the first epoch also warms up);
d. generation (``polyrag.llm.transformers_backend.TransformersBackend``), Qwen2.5-0.5B shape in
   bfloat16 (its checkpoint's dtype, which ``dtype="auto"`` loads): generated tokens per second;
e. LoRA fine-tuning (``polyrag.finetune.train.train_lora``, trl's SFTTrainer), Qwen2.5-0.5B shape,
   the paper's LoRA settings: tokens and optimizer steps per second, after a warm-up run;
f. dense retrieval's encoding job (``polyrag.retrieval.dense.encode_shard`` through
   ``SentenceTransformerEncoder``), BGE-M3 shape (XLM-RoBERTa large, CLS pooling) and
   multilingual-e5-small shape (BERT, 384 dimensions, mean pooling), float32 and bfloat16, on
   passages of 160 tokens (a 100-word chunk with its title: XLM-R's tokenizer gives a median of 142
   in English, 160 in German, 152 in Hindi on XQuAD): passages per second, and the hours one GPU
   takes for MIRACL's English corpus (32.9M passages).

Every row carries the device, torch's version and the wall time; on CUDA also the peak memory
(``torch.cuda.max_memory_allocated``) of its section. The synthetic tokenizer maps one word to one
token, so sequence lengths are exact.

    python3 benchmarks/bench_gpu.py --device cuda --out bench_gpu.csv
    .venv/bin/python benchmarks/bench_gpu.py --device cpu --quick --out /tmp/bench_gpu.csv   # smoke test
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import logging
import random
import shutil
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

COLUMNS = ["section", "code_path", "shape", "setting", "metric", "value", "unit", "seconds", "peak_memory_gib",
           "device", "device_name", "torch", "transformers", "utc"]

# Published configs (config.json on the hub) of the production models.
MDEBERTA_V3_BASE = {"vocab_size": 251000, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                    "intermediate_size": 3072, "max_position_embeddings": 512, "relative_attention": True,
                    "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": True,
                    "pos_att_type": ["p2c", "c2p"], "position_biased_input": False, "type_vocab_size": 0,
                    "max_relative_positions": -1, "layer_norm_eps": 1e-7}
BGE_RERANKER_V2_M3 = {"vocab_size": 250002, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "intermediate_size": 4096, "max_position_embeddings": 8194, "type_vocab_size": 1,
                      "layer_norm_eps": 1e-5}
BGE_M3 = BGE_RERANKER_V2_M3  # the reranker is BGE-M3 with a classification head: the same encoder
E5_SMALL = {"vocab_size": 250037, "hidden_size": 384, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 1536, "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12}
MIRACL_EN_PASSAGES = 32_893_221
QWEN25_05B = {"vocab_size": 151936, "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
              "num_key_value_heads": 2, "intermediate_size": 4864, "max_position_embeddings": 32768,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": True}
# --quick: the same architectures, small enough for a CPU smoke test of this script.
QUICK = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
         "vocab_size": 4000}
QUICK_QWEN = {**QUICK, "num_key_value_heads": 2, "vocab_size": 12800}  # above the BPE tokenizer's 12000

WORDS = 3000  # synthetic vocabulary (one token per word)


def synthetic_words(seed: int = 0, ascii_only: bool = False) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz" + ("" if ascii_only else "äöüéèñçßабвгдежзиклмнопрстуфхцчшщ")
    words = set()
    while len(words) < WORDS:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str], length: int) -> str:
    return " ".join(rng.choice(words) for _ in range(length))


def word_tokenizer(words: list[str], special: list[str], pair_template: bool, **named):
    """A word-level tokenizer knowing every synthetic word (one word, one token)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token=special[0]))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.train_from_iterator([" ".join(words)] * 2, trainers.WordLevelTrainer(special_tokens=special, min_frequency=1))
    if pair_template:
        cls, sep = raw.token_to_id("[CLS]"), raw.token_to_id("[SEP]")
        raw.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=raw, **named)


def bpe_tokenizer(words: list[str]):
    """A byte-level BPE tokenizer trained on the synthetic words (about one token per word): a Qwen2
    checkpoint's folder loads as transformers' Qwen2Tokenizer, which rebuilds a byte-level BPE from
    the vocabulary and merges (a word-level tokenizer would come back encoding nothing)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator([" ".join(words)] * 2, trainers.BpeTrainer(
        vocab_size=4 * len(words), special_tokens=["[UNK]", "[PAD]", "[BOS]", "[EOS]"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]",
                                   eos_token="[EOS]")


class Bench:
    def __init__(self, args):
        import torch
        import transformers

        self.torch = torch
        self.args = args
        self.device = args.device
        self.cuda = args.device.startswith("cuda")
        self.device_name = torch.cuda.get_device_name(0) if self.cuda else "cpu"
        self.versions = {"torch": torch.__version__, "transformers": transformers.__version__}
        self.rows: list[dict] = []
        self.words = synthetic_words()
        self.ascii_words = synthetic_words(ascii_only=True)
        self.rng = random.Random(0)
        self.scratch = Path(tempfile.mkdtemp(prefix="polyrag-bench-gpu-"))

    # --- helpers -------------------------------------------------------------------------------

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    @contextlib.contextmanager
    def section(self):
        if self.cuda:
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats()
        yield

    def peak(self) -> float | None:
        return round(self.torch.cuda.max_memory_allocated() / 2**30, 2) if self.cuda else None

    def timed(self, run, repeats: int) -> float:
        """Mean seconds of ``run()`` after one warm-up call, synchronised around each."""
        run()
        self.sync()
        start = time.perf_counter()
        for _ in range(repeats):
            run()
        self.sync()
        return (time.perf_counter() - start) / repeats

    def add(self, section: str, code_path: str, shape: str, setting: str, metric: str, value: float, unit: str,
            seconds: float) -> None:
        row = {"section": section, "code_path": code_path, "shape": shape, "setting": setting, "metric": metric,
               "value": round(value, 3), "unit": unit, "seconds": round(seconds, 3), "peak_memory_gib": self.peak(),
               "device": self.device, "device_name": self.device_name, **self.versions,
               "utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        self.rows.append(row)
        print(f"  {section:<9} {setting:<38} {metric:<26} {row['value']:>12,.1f} {unit:<10} "
              f"({row['seconds']:.2f} s, peak {row['peak_memory_gib']} GiB)", flush=True)

    def config(self, published: dict, quick: dict) -> dict:
        return {**published, **quick} if self.args.quick else dict(published)

    def seq(self, length: int) -> int:
        return min(length, 48) if self.args.quick else length

    # --- models ----------------------------------------------------------------------------------

    def pair_classifier(self, name: str, config_class, model_class, published: dict, quick: dict,
                        id2label: dict) -> Path:
        """A random sequence-pair classifier of the published shape, with the synthetic tokenizer."""
        torch = self.torch
        path = self.scratch / name
        tokenizer = word_tokenizer(self.words, ["[UNK]", "[PAD]", "[CLS]", "[SEP]"], True, unk_token="[UNK]",
                                   pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
        config = config_class(**self.config(published, quick), num_labels=len(id2label), id2label=id2label,
                              label2id={v: k for k, v in id2label.items()}, pad_token_id=tokenizer.pad_token_id)
        torch.manual_seed(0)
        with torch.device(self.device):  # random init on the GPU: seconds less for 0.3-0.6B parameters
            model = model_class(config)
        model.to("cpu").save_pretrained(path)
        tokenizer.save_pretrained(path)
        del model
        return path

    def causal_lm(self) -> Path:
        """A random Qwen2 causal LM of Qwen2.5-0.5B's shape, saved in bfloat16 as its checkpoint is."""
        torch = self.torch
        from transformers import Qwen2Config, Qwen2ForCausalLM

        path = self.scratch / "qwen"
        if path.is_dir():
            return path
        tokenizer = bpe_tokenizer(self.ascii_words)
        config = Qwen2Config(**self.config(QWEN25_05B, QUICK_QWEN), pad_token_id=tokenizer.pad_token_id,
                             bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
        torch.manual_seed(0)
        with torch.device(self.device):
            model = Qwen2ForCausalLM(config).to(torch.bfloat16)
        model.to("cpu").save_pretrained(path)
        tokenizer.save_pretrained(path)
        del model
        return path

    def pairs(self, n: int, length: int) -> tuple[list[str], list[str]]:
        """``n`` (premise, hypothesis) pairs of ``length`` tokens with the special tokens."""
        second = max(4, length // 12)
        first = length - second - 3
        return ([sentence(self.rng, self.words, first) for _ in range(n)],
                [sentence(self.rng, self.words, second) for _ in range(n)])

    # --- sections ------------------------------------------------------------------------------

    def nli(self) -> None:
        from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

        from polyrag.features.support import NLIScorer

        with self.section():
            path = self.pair_classifier("nli", DebertaV2Config, DebertaV2ForSequenceClassification, MDEBERTA_V3_BASE,
                                        QUICK, {0: "entailment", 1: "neutral", 2: "contradiction"})
            length = self.seq(256)
            for dtype in ("float32", "bfloat16"):
                for batch in self.args.batches:
                    scorer = NLIScorer(str(path), device=self.device, batch_size=batch, max_length=512, dtype=dtype)
                    premises, hypotheses = self.pairs(batch * self.args.steps, length)
                    seconds = self.timed(lambda: scorer.probabilities(premises, hypotheses), self.args.repeats)
                    self.add("nli", "NLIScorer.probabilities", "mDeBERTa-v3-base",
                             f"{dtype}, batch {batch}, {length} tokens", "pairs/s", len(premises) / seconds, "pairs/s",
                             seconds)
                    del scorer

    def reranker(self) -> None:
        from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

        from polyrag.features.reranker import Reranker

        with self.section():
            path = self.pair_classifier("reranker", XLMRobertaConfig, XLMRobertaForSequenceClassification,
                                        BGE_RERANKER_V2_M3, QUICK, {0: "LABEL_0"})
            length = self.seq(256)
            for dtype in ("float32", "bfloat16"):
                for batch in self.args.batches:
                    reranker = Reranker(str(path), device=self.device, batch_size=batch, max_length=512, dtype=dtype)
                    passages, queries = self.pairs(batch * self.args.steps, length)
                    pairs = list(zip(queries, passages))  # (query, passage)
                    seconds = self.timed(lambda: reranker.scores(pairs), self.args.repeats)
                    self.add("reranker", "Reranker.scores (CrossEncoder)", "bge-reranker-v2-m3",
                             f"{dtype}, batch {batch}, {length} tokens", "pairs/s", len(pairs) / seconds, "pairs/s",
                             seconds)
                    del reranker

    def judge(self) -> None:
        from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

        from polyrag.mars.encoder_judge import train_transformers_judge

        with self.section():
            path = self.scratch / "nli"
            if not path.is_dir():  # a 3-label NLI checkpoint: the judge replaces its head, as in production
                self.pair_classifier("nli", DebertaV2Config, DebertaV2ForSequenceClassification, MDEBERTA_V3_BASE,
                                     QUICK, {0: "entailment", 1: "neutral", 2: "contradiction"})
            length, batch = self.seq(256), self.args.judge_batch
            n = batch * self.args.judge_steps
            a, b = self.pairs(n + batch, length)
            examples = [(x, y, k % 2) for k, (x, y) in enumerate(zip(a, b))]
            train, validation = examples[:n], examples[n:]
            # xquad-mars.yaml's judge settings (mDeBERTa-v3-base, batch 32), two epochs, full fine-tuning.
            settings = {"model": str(path), "epochs": 2, "learning_rate": 5e-6, "batch_size": batch, "patience": 3,
                        "max_length": 512, "device": self.device, "lora": None}
            marks = EpochClock()
            logger = logging.getLogger("polyrag.mars.encoder_judge")
            logger.addHandler(marks)
            logger.setLevel(logging.INFO)
            try:
                start = time.perf_counter()
                train_transformers_judge(train, validation, settings, self.scratch / "judge", seed=0)
                total = time.perf_counter() - start
            finally:
                logger.removeHandler(marks)
            epochs = marks.epoch_seconds()
            setting = f"batch {batch}, {length} tokens, {n} examples"
            for epoch, seconds in enumerate(epochs, start=1):
                self.add("judge", "train_transformers_judge", "mDeBERTa-v3-base", f"{setting}, epoch {epoch}",
                         "train examples/s" + (" (warm-up)" if epoch == 1 else ""), n / seconds, "examples/s",
                         seconds)
            self.add("judge", "train_transformers_judge", "mDeBERTa-v3-base", f"{setting}, whole call",
                     "seconds (load+2 epochs+save)", total, "s", total)

    def generation(self) -> None:
        from polyrag.llm.transformers_backend import TransformersBackend
        from polyrag.llm.types import Request

        with self.section():
            path = self.causal_lm()
            batch, new = self.args.gen_batch, (8 if self.args.quick else 64)
            prompt_length = self.seq(128)
            backend = TransformersBackend(str(path), device=self.device, batch_size=batch, mode="completion")
            requests = [Request(prompt=sentence(self.rng, self.ascii_words, prompt_length), temperature=0,
                                max_tokens=new) for _ in range(batch)]
            prompt_tokens = sum(len(backend.tokenizer(r.prompt)["input_ids"]) for r in requests)
            assert prompt_tokens >= batch * prompt_length, "the tokenizer lost the prompts' words"
            results = []

            def run():
                results.append(dict(backend.stream(requests)))

            seconds = self.timed(run, self.args.repeats)
            generated = sum(response.tokens for response in results[-1].values()) - prompt_tokens
            dtype = str(backend.model.dtype).replace("torch.", "")
            self.add("generate", "TransformersBackend.stream", "Qwen2.5-0.5B",
                     f"{batch} prompts x {prompt_tokens / batch:.0f} tokens, {new} new, greedy, {dtype}",
                     "generated tokens/s",
                     generated / seconds, "tokens/s", seconds)
            backend.close()

    def lora(self) -> None:
        import json

        from polyrag.finetune.train import train_lora

        path = self.causal_lm()
        length = self.seq(512)
        completion = max(4, length // 8)

        def examples(n: int) -> list[dict]:
            return [{"query_id": f"q{k}", "messages": None,
                     "prompt": sentence(self.rng, self.ascii_words, int(0.9 * (length - completion))),
                     "completion": sentence(self.rng, self.ascii_words, int(0.9 * completion))} for k in range(n)]

        per_device, batch = self.args.lora_per_device, self.args.lora_batch
        for checkpointing in (True, False):
            # The paper's LoRA (r 16, alpha 16, all seven projections), lr 2e-4, bf16 on a GPU that has it.
            settings = {"batch_size": batch, "per_device_batch_size": per_device, "epochs": 1,
                        "max_length": 2 * length, "gradient_checkpointing": checkpointing, "device": self.device}
            with self.section():
                # Warm-up: CUDA kernels and trl's Triton kernels compile on first use.
                train_lora(examples(batch), settings, str(path), self.scratch / "warm", self.scratch / "warm.csv", seed=0)
                summary, model = train_lora(examples(batch * self.args.lora_steps), settings, str(path),
                                            self.scratch / "lora", self.scratch / "lora.csv", seed=0)
                del model
                seconds = summary["seconds"]
                tokens = summary["tokens_per_second"] * seconds / summary["examples"]
                setting = (f"{tokens:.0f} tokens, batch {batch} ({per_device}/device), "
                           f"checkpointing {'on' if checkpointing else 'off'}")
                self.add("lora", "train_lora (trl SFTTrainer)", "Qwen2.5-0.5B", setting, "tokens/s",
                         summary["tokens_per_second"], "tokens/s", seconds)
                self.add("lora", "train_lora (trl SFTTrainer)", "Qwen2.5-0.5B", setting, "optimizer steps/s",
                         summary["optimizer_steps"] / seconds, "steps/s", seconds)
                print(f"    training.json: device {summary['device']}, {summary['examples']} examples, "
                      f"{summary['optimizer_steps']} optimizer steps, {summary['trainable_parameters']:,} trainable "
                      f"parameters, {json.dumps(summary['settings']['lora'])}", flush=True)


    def sentence_encoder(self, name: str, config_class, model_class, published: dict, pooling: str) -> Path:
        """A random encoder of the published shape saved as a sentence-transformers folder (transformer,
        pooling, normalisation), with the synthetic tokenizer."""
        torch = self.torch
        from sentence_transformers import SentenceTransformer, models

        path = self.scratch / name
        raw = self.scratch / f"{name}-transformer"
        tokenizer = word_tokenizer(self.words, ["[UNK]", "[PAD]", "[CLS]", "[SEP]"], True, unk_token="[UNK]",
                                   pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
        config = config_class(**self.config(published, QUICK), pad_token_id=tokenizer.pad_token_id)
        torch.manual_seed(0)
        with torch.device(self.device):
            model = model_class(config, add_pooling_layer=False)
        model.to("cpu").save_pretrained(raw)
        tokenizer.save_pretrained(raw)
        del model
        transformer = models.Transformer(str(raw), max_seq_length=512)
        modules = [transformer, models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode=pooling),
                   models.Normalize()]
        SentenceTransformer(modules=modules, device="cpu").save(str(path))
        return path

    def dense(self) -> None:
        import pandas as pd
        from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

        from polyrag.retrieval.dense import encode_shard, make_encoder

        length = self.seq(160) - 2  # [CLS] text [SEP]
        for shape, config_class, model_class, published, pooling in (
                ("bge-m3", XLMRobertaConfig, XLMRobertaModel, BGE_M3, "cls"),
                ("multilingual-e5-small", BertConfig, BertModel, E5_SMALL, "mean")):
            path = self.sentence_encoder(shape, config_class, model_class, published, pooling)
            for dtype in ("float32", "bfloat16"):
                for batch in self.args.dense_batches:
                    with self.section():
                        encoder = make_encoder(str(path), query_prompt="", passage_prompt="", device=self.device,
                                               batch_size=batch, dtype=dtype)
                        n = batch * self.args.dense_steps
                        corpus = pd.DataFrame({"docid": [str(k) for k in range(n)], "title": [""] * n,
                                               "text": [sentence(self.rng, self.words, length) for _ in range(n)]})
                        seconds = self.timed(lambda: encode_shard(corpus, 0, 1, encoder), self.args.repeats)
                        setting = f"{dtype}, batch {batch}, {length + 2} tokens"
                        self.add("dense", "encode_shard (SentenceTransformerEncoder)", shape, setting,
                                 "passages/s", n / seconds, "passages/s", seconds)
                        self.add("dense", "encode_shard (SentenceTransformerEncoder)", shape, setting,
                                 "hours for MIRACL-en", MIRACL_EN_PASSAGES * seconds / n / 3600, "GPU-hours",
                                 seconds)
                        del encoder


class EpochClock(logging.Handler):
    """Times the encoder judge's epochs from its log: "training on ..." starts the first, each
    "epoch N: ..." line ends one (the validation pass, a few batches, included)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.marks: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("training on ") or message.startswith("epoch "):
            self.marks.append(time.perf_counter())

    def epoch_seconds(self) -> list[float]:
        return [b - a for a, b in zip(self.marks, self.marks[1:])]


SECTIONS = ["nli", "reranker", "judge", "generate", "lora", "dense"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, help="CSV of every row")
    parser.add_argument("--quick", action="store_true", help="tiny shapes and counts (a CPU smoke test)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS)
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64], help="NLI and reranker batch sizes")
    parser.add_argument("--steps", type=int, default=4, help="NLI/reranker batches per timed call")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls after the warm-up call")
    parser.add_argument("--judge-batch", type=int, default=32)
    parser.add_argument("--judge-steps", type=int, default=16, help="training batches per judge epoch")
    parser.add_argument("--gen-batch", type=int, default=32)
    parser.add_argument("--lora-batch", type=int, default=16, help="effective batch (examples per optimizer step)")
    parser.add_argument("--lora-per-device", type=int, default=4)
    parser.add_argument("--lora-steps", type=int, default=4, help="optimizer steps of the timed run")
    parser.add_argument("--dense-batches", type=int, nargs="+", default=[64, 256], help="dense encoding batch sizes")
    parser.add_argument("--dense-steps", type=int, default=8, help="dense encoding batches per timed call")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.steps, args.repeats = [4], 2, 1
        args.judge_batch, args.judge_steps, args.gen_batch = 8, 2, 4
        args.lora_batch, args.lora_per_device, args.lora_steps = 2, 1, 2
        args.dense_batches, args.dense_steps = [4], 2

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(Exception):  # progress bars of every model load and dataset map
        import datasets
        import transformers

        datasets.disable_progress_bars()
        transformers.utils.logging.disable_progress_bar()
    bench = Bench(args)
    print(f"bench_gpu: device {args.device} ({bench.device_name}), torch {bench.versions['torch']}, "
          f"transformers {bench.versions['transformers']}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
          f"{', QUICK shapes (not the production ones)' if args.quick else ''}", flush=True)
    failed = []
    for name in args.only:
        start = time.perf_counter()
        print(f"\n[{name}]", flush=True)
        try:
            {"nli": bench.nli, "reranker": bench.reranker, "judge": bench.judge, "generate": bench.generation,
             "lora": bench.lora, "dense": bench.dense}[name]()
        except Exception:  # noqa: BLE001 - one section's failure must not hide the others' numbers
            failed.append(name)
            traceback.print_exc()
            print(f"  {name}: FAILED (traceback above)", flush=True)
        print(f"  [{name}: {time.perf_counter() - start:.1f} s]", flush=True)
        if args.out:  # after every section: a run cut short keeps what it measured
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with open(args.out, "w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=COLUMNS)
                writer.writeheader()
                writer.writerows(bench.rows)
    shutil.rmtree(bench.scratch, ignore_errors=True)
    print()
    if bench.rows:
        import pandas as pd

        table = pd.DataFrame(bench.rows)[["section", "shape", "setting", "metric", "value", "unit", "peak_memory_gib"]]
        print(table.to_string(index=False))
    if failed:
        print(f"\nFAILED sections: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
