# polyrag: multilingual RAG evaluation as one DAG of cached, file-targeted stages.
# The stages live in rules/*.smk; the library they call lives in polyrag/.
from snakemake.utils import min_version

from polyrag.plan_summary import watch_dry_runs

min_version("9.0")


# config.yaml (the demo) is the default; a --configfile replaces it instead of extending it,
# so a cluster config never inherits the demo's models.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/retrieval.smk"
include: "rules/generate.smk"
include: "rules/features.smk"
include: "rules/judge.smk"
include: "rules/arena.smk"
include: "rules/human_labels.smk"
include: "rules/meta_eval.smk"
include: "rules/mars.smk"
include: "rules/finetune.smk"
include: "rules/checks.smk"


report: "report/workflow.rst"


rule all:
    input:
        all_targets(),
    default_target: True


# Last: every rule's params in the form Snakemake compares (rules/common.smk), so that reruns follow content.
canonical_params(workflow.rules)

# A dry run prints what would run, and where, as one table (polyrag/plan_summary.py).
watch_dry_runs(workflow)
