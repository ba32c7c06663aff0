"""RAG systems: what each system was given to answer from (``passages``), the one place every stage
reads it from."""
