"""Snakemake entry point of rule checks: results/checks.csv, the known-truth checks of checks:
(polyrag.checks), one row per check and subject; a failed check is logged, never an error."""

import logging

from polyrag.checks import run_checks
from polyrag.logs import run_logged


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    table = run_checks(sm.params.checks, sm.params.files, sm.params.settings)
    log = logging.getLogger("polyrag")
    for row in table.itertuples():
        (log.info if row.passed else log.warning)("%s %s (%s): expected %s; observed %s", "PASS" if row.passed else "FAIL",
                                                  row.check, row.subject, row.expected, row.observed)
    table.to_csv(sm.output[0], index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
