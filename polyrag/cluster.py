"""Checks of a SLURM cluster before a run: problems that would otherwise hang it with no message.

snakemake-executor-plugin-slurm learns that a job finished from ``sacct`` or ``squeue``. Where
``sacct`` runs but has no accounting database (no slurmdbd, common on small clusters), it reports
no job at all, the plugin waits for ever, and the user sees a run that never ends.
"""

from __future__ import annotations

import shutil
import subprocess

from polyrag.errors import ConfigError


def sacct_reports_jobs() -> tuple[bool, str]:
    """Whether ``sacct`` can report job states here, and what it said."""
    try:
        result = subprocess.run(["sacct", "--noheader", "-X", "-j", "1"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, str(error)
    said = (result.stdout + result.stderr).strip()
    return result.returncode == 0 and "accounting storage is disabled" not in said.lower(), said


def status_command_in_use(configured: str, min_job_age: int | None, init_seconds: int) -> str:
    """The command the plugin (2.8) will use: it replaces squeue by sacct where squeue forgets
    finished jobs before the plugin's third status check (MinJobAge under 3 x its first wait)."""
    if configured == "squeue" and (min_job_age is None or min_job_age < 3 * init_seconds) and shutil.which("sacct"):
        return "sacct"
    return configured


def check_slurm_status_command(configured: str, min_job_age: int | None, init_seconds: int) -> None:
    """Stop before any job when the plugin would check job states with a sacct that cannot answer."""
    if status_command_in_use(configured, min_job_age, init_seconds) != "sacct":
        return
    works, said = sacct_reports_jobs()
    if works:
        return
    if configured == "sacct":
        advice = "set slurm-status-command: squeue in your profile (profiles/slurm does), or --slurm-status-command squeue"
    else:
        advice = (f"squeue forgets finished jobs after MinJobAge={min_job_age} s, under the {3 * init_seconds} s the plugin "
                  "needs, so it would fall back to sacct: raise MinJobAge in slurm.conf (300 s is SLURM's default)")
    raise ConfigError(f"sacct cannot report job states on this cluster ({said or 'no output'}); the run would wait "
                      f"for ever for its first job: {advice}")


def check_slurm_run(executor_settings) -> None:
    """The checks above for the settings of snakemake-executor-plugin-slurm (called at onstart)."""
    from snakemake_executor_plugin_slurm.job_status_query import get_min_job_age

    check_slurm_status_command(executor_settings.status_command, get_min_job_age(),
                               executor_settings.init_seconds_before_status_checks)
