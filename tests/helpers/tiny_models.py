"""Tiny random-initialised Hugging Face models with a tokenizer trained on fixture text, built in
the tests: the real loading and inference code paths, without any download."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

FIXTURE_TEXT = [
    "The Niger River flows into the Gulf of Guinea through a large delta .",
    "Der Niger mündet über ein großes Delta in den Golf von Guinea .",
    "नाइजर नदी गिनी की खाड़ी में गिरती है ।",
    "尼日尔河 注入 几内亚湾 。",
    "Mozart was born in Salzburg in 1756 .",
]
SPECIAL = ["[UNK]", "[PAD]", "[CLS]", "[SEP]"]


def pair_tokenizer() -> PreTrainedTokenizerFast:
    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(FIXTURE_TEXT * 3, trainers.WordLevelTrainer(special_tokens=SPECIAL))
    cls, sep = raw.token_to_id("[CLS]"), raw.token_to_id("[SEP]")
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]")


def sequence_classifier(path: Path, id2label: dict[int, str], max_positions: int = 128) -> Path:
    """A 2-layer BERT pair classifier saved to ``path`` (``max_positions``: the longest pair it reads)."""
    import torch

    tokenizer = pair_tokenizer()
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=max_positions, num_labels=len(id2label),
                        id2label=id2label, label2id={v: k for k, v in id2label.items()},
                        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


CAUSAL_SPECIAL = ["[UNK]", "[PAD]", "[BOS]", "[EOS]"]


def causal_lm(path: Path, texts: list[str]) -> Path:
    """A 2-layer Llama (q/k/v/o and gate/up/down projections, as LoRA targets) saved to ``path``,
    with a word-level tokenizer trained on ``texts`` that adds BOS to plain text, as Gemma's does."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(list(texts) * 2, trainers.WordLevelTrainer(special_tokens=CAUSAL_SPECIAL))
    bos = raw.token_to_id("[BOS]")
    raw.post_processor = processors.TemplateProcessing(single="[BOS] $A", pair="[BOS] $A $B", special_tokens=[("[BOS]", bos)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]",
                                        bos_token="[BOS]", eos_token="[EOS]")
    config = LlamaConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=bos, eos_token_id=tokenizer.eos_token_id,
                         initializer_range=0.2)  # the default 0.02 caps the frozen head's logits near uniform
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
