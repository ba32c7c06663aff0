"""Answer generation: prompts per question and LLM calls; their outputs are read into reason, answer
and citations by ``polyrag.answer_parsing``."""
