"""polyrag: a Snakemake workflow that benchmarks multilingual retrieval-augmented generation."""

from importlib import resources as _resources

__version__ = "0.1.0"


def package_path(*parts: str):
    """Path of a file shipped inside the package (prompts, schemas)."""
    return _resources.files("polyrag").joinpath(*parts)
