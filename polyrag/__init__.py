"""polyrag: a Snakemake workflow that benchmarks multilingual retrieval-augmented generation."""

__version__ = "0.1.0"
