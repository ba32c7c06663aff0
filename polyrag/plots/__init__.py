"""Figures of the Snakemake report (matplotlib, Agg backend: no display needed)."""

import matplotlib

matplotlib.use("Agg")
