"""The workflow's config: ``validate`` checks it once when the Snakefile is parsed (schema, defaults,
cross-key checks); ``queries`` answers what the rules ask of it."""
