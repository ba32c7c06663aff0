"""Meta-evaluation of automatic evaluators against MEMERAG's expert sentence-level labels."""
