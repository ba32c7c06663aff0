# Known-truth checks (polyrag/checks.py; checks: in the config): results/checks.csv says, per check,
# what the config's known truths lead us to expect, what the run gave and whether it passed.


include: "inputs/checks.smk"


rule checks:
    input:
        check_input_files,
    output:
        "results/checks.csv",
    params:
        checks=CHECKS,
        files=check_files,
        settings=CHECK_SETTINGS,
    localrule: True  # a few small tables
    log:
        "logs/checks.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/checks.py"
