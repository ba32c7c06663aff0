"""RAG systems under test. A system is what answers the benchmark's questions: a language model
behind one of the LLM backends (``polyrag.llm``), or a user's own system whose answers and passages
come from files (``answer_files``, ``backend: file``). Every answer records the passages its system
was given; ``passages`` is the one place every stage reads them and their relevance from."""
