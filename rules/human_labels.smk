# The gold-anchored arena (docs/human_labels.md): one judge on every unit (question, model pair),
# a seeded sample of units labelled by people (or a stand-in judge), and Bradley-Terry logits
# anchored on those labels by PPI++. The annotation round trip is files: tasks out, labels in.


include: "inputs/human_labels.smk"


# The judge's value of every unit: model_a's mean score over the valid orders.
rule gold_units:
    input:
        games=judgment_files,
    output:
        "results/arena/{judge}/{lang}/units.parquet",
    localrule: True  # a group-by over one judge's games: seconds
    log:
        "logs/arena/{judge}/{lang}/units.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judge_units.py"


# The units to label (a seeded uniform sample) and the files annotators fill in; key.csv says
# which model is on which side and stays with you.
rule gold_sample:
    input:
        units=lambda wildcards: expand(rules.gold_units.output[0], judge=GOLD["judge"], lang=wildcards.lang),
        questions=QUESTIONS,
        answers=lambda wildcards: expand(ANSWERS, model=judge_contestants(config, GOLD["judge"]), lang=wildcards.lang),
    output:
        key="results/gold/{lang}/key.csv",
        tasks="results/gold/{lang}/tasks.csv",
        tasks_jsonl="results/gold/{lang}/tasks.jsonl",
        label_studio="results/gold/{lang}/label_studio.json",
        label_studio_config="results/gold/{lang}/label_studio.xml",
    params:
        sample=GOLD and GOLD["sample"],
        models=GOLD and judge_contestants(config, GOLD["judge"]),
        seed=config["seed"],
    localrule: True
    log:
        "logs/gold/{lang}/sample.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/human_label_sample.py"


# The demo's stand-in for a person: a judge's verdict on each task, in the order it is shown.
rule gold_stand_in:
    input:
        key=rules.gold_sample.output.key,
        games=lambda wildcards: judgment_paths(wildcards.judge, wildcards.lang),
    output:
        "results/gold/{lang}/filled_by_{judge}.csv",
    localrule: True
    log:
        "logs/gold/{lang}/filled_by_{judge}.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/stand_in_labels.py"


# The filled file read back: gold values for model_a, counts of ties, can't-judge and missing.
rule gold_labels:
    input:
        filled=gold_labels_source,
        key=rules.gold_sample.output.key,
    output:
        labels="results/gold/{lang}/labels.parquet",
        counts="results/gold/{lang}/label_counts.json",
    localrule: True
    log:
        "logs/gold/{lang}/labels.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/human_labels.py"


# Per language and pooled (all): gold-anchored, judge-only and gold-only logits, rank-sets, n_eff,
# and how the judge agrees with the gold labels.
rule gold_anchored:
    input:
        units=lambda wildcards: expand(rules.gold_units.output[0], judge=wildcards.judge, lang=gold_scope_languages(wildcards)),
        labels=lambda wildcards: expand(rules.gold_labels.output.labels, lang=gold_scope_languages(wildcards)),
        counts=lambda wildcards: expand(rules.gold_labels.output.counts, lang=gold_scope_languages(wildcards)),
        games=lambda wildcards: [
            path for lang in gold_scope_languages(wildcards) for path in judgment_paths(wildcards.judge, lang)
        ],
        answers=lambda wildcards: expand(ANSWERS, model=contestants(wildcards), lang=gold_scope_languages(wildcards)),
    output:
        table="results/arena/{judge}/{scope}/gold_anchored.csv",
        agreement="results/arena/{judge}/{scope}/gold_agreement.csv",
    wildcard_constraints:
        scope=alternatives(GOLD_LANGUAGES + ["all"]),
    params:
        models=contestants,
        languages=gold_scope_languages,
        gold=GOLD,
    localrule: True  # Newton fits on a few thousand units: seconds
    log:
        "logs/arena/{judge}/{scope}/gold_anchored.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/label_anchored.py"
