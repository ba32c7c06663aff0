"""Snakemake entry point of rule train_student: the LoRA adapter, the loss history and the per-epoch
loss on the training examples and the held-out questions."""

from pathlib import Path

import torch

from polyrag.logs import run_logged
from polyrag.finetune.curate import read_examples
from polyrag.finetune.student import base_checkpoint
from polyrag.finetune.train import train_lora


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    torch.set_num_threads(sm.threads)
    student = {key: value for key, value in sm.params.student.items() if value is not None}
    base = base_checkpoint(student, sm.params.cache_dir)
    train_lora(read_examples(sm.input.examples), {"lora": sm.params.lora, **sm.params.trainer}, base,
               Path(sm.output.adapter).parent, sm.output.loss, sm.params.seed, mode=student.get("mode", "chat"),
               epoch_path=sm.output.epoch_loss)


run_logged(main, snakemake.log[0])  # noqa: F821
