"""Answer generation: prompts per question, LLM calls, parsing of reason, answer and citations."""
