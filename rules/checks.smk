# Known-truth checks (polyrag/checks.py; checks: in the config): checks.csv (in results_dir) says, per check,
# what the config's known truths lead us to expect, what the run gave and whether it passed.


include: "inputs/checks.smk"


rule checks:
    input:
        check_input_files,
    output:
        results_path("checks.csv"),
    params:
        checks=CHECKS,
        files=check_files,
        settings=CHECK_SETTINGS,
    localrule: True  # a few small tables
    log:
        log_path("checks.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/checks.py"
