"""Supervised fine-tuning of an answer model on a teacher's cited answers (MIRAGE-BENCH §3.2, app. C).

- :mod:`polyrag.finetune.teacher`: the teacher answers each training question in the MIRAGE format from
  its relevant passages only, through the LLM layer (cached);
- :mod:`polyrag.finetune.curate`: teacher answers are filtered (counts per reason) and turned into
  training examples whose prompts add the non-relevant passages back, shuffled, in exactly the
  prompt the student gets at evaluation time;
- :mod:`polyrag.finetune.train`: LoRA via ``peft`` and ``trl``'s ``SFTTrainer``, loss on the completion
  only; writes the adapter (safetensors) and the loss history (CSV);
- :mod:`polyrag.finetune.student`: the student's base checkpoint (a Hub model, or a GGUF package
  converted to a plain checkpoint) and the model entry that serves it with its adapter.
"""
