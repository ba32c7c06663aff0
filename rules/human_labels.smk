# The label-anchored arena (docs/human_labels.md): one judge on every unit (question, model pair),
# a seeded sample of units labelled by people (or a stand-in judge), and Bradley-Terry logits
# anchored on those human labels by PPI++. The annotation round trip is files: tasks out, labels in.


include: "inputs/human_labels.smk"


# The judge's value of every unit: model_a's mean score over the valid orders.
rule judge_units:
    input:
        games=judgment_files,
    output:
        results_path("arena/{judge}/{lang}/units.parquet"),
    localrule: True  # a group-by over one judge's games: seconds
    log:
        log_path("arena/{judge}/{lang}/units.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/judge_units.py"


# The units to label (a seeded uniform sample) and the files annotators fill in; key.csv says
# which model is on which side and stays with you.
rule human_label_sample:
    input:
        units=lambda wildcards: expand(rules.judge_units.output[0], judge=HUMAN_LABELS["judge"], lang=wildcards.lang),
        questions=QUESTIONS,
        answers=lambda wildcards: expand(ANSWERS, model=labelled_contestants(wildcards), lang=wildcards.lang),
    output:
        key=results_path("human_labels/{lang}/key.csv"),
        tasks=results_path("human_labels/{lang}/tasks.csv"),
        tasks_jsonl=results_path("human_labels/{lang}/tasks.jsonl"),
        label_studio=results_path("human_labels/{lang}/label_studio.json"),
        label_studio_config=results_path("human_labels/{lang}/label_studio.xml"),
    params:
        sample=HUMAN_LABELS and HUMAN_LABELS["sample"],
        models=labelled_contestants,
        seed=config["seed"],
    localrule: True
    log:
        log_path("human_labels/{lang}/sample.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/human_label_sample.py"


# The demo's stand-in for a person: a judge's verdict on each task, in the order it is shown.
rule stand_in_labels:
    input:
        key=rules.human_label_sample.output.key,
        games=lambda wildcards: judgment_paths(wildcards.judge, wildcards.lang),
    output:
        results_path("human_labels/{lang}/filled_by_{judge}.csv"),
    localrule: True
    log:
        log_path("human_labels/{lang}/filled_by_{judge}.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/stand_in_labels.py"


# The filled file read back: each label's value for model_a, counts of ties, can't-judge and missing.
rule human_labels:
    input:
        filled=filled_labels_file,
        key=rules.human_label_sample.output.key,
    output:
        labels=results_path("human_labels/{lang}/labels.parquet"),
        counts=results_path("human_labels/{lang}/label_counts.json"),
    localrule: True
    log:
        log_path("human_labels/{lang}/labels.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/human_labels.py"


# Per language and pooled (all): label-anchored, judge-only and labels-only logits, rank-sets, n_eff,
# and how the judge agrees with the human labels.
rule label_anchored:
    input:
        units=lambda wildcards: expand(rules.judge_units.output[0], judge=wildcards.judge, lang=label_anchored_languages(wildcards)),
        labels=lambda wildcards: expand(rules.human_labels.output.labels, lang=label_anchored_languages(wildcards)),
        counts=lambda wildcards: expand(rules.human_labels.output.counts, lang=label_anchored_languages(wildcards)),
        games=lambda wildcards: [
            path for lang in label_anchored_languages(wildcards) for path in judgment_paths(wildcards.judge, lang)
        ],
        answers=lambda wildcards: answered_paths(ANSWERS, label_anchored_contestants(wildcards), label_anchored_languages(wildcards)),
    output:
        table=results_path("arena/{judge}/{scope}/label_anchored.csv"),
        agreement=results_path("arena/{judge}/{scope}/label_agreement.csv"),
    wildcard_constraints:
        scope=alternatives(LABELLED_LANGUAGES + ["all"]),
    params:
        models=label_anchored_contestants,
        languages=label_anchored_languages,
        human_labels=HUMAN_LABELS,
    localrule: True  # Newton fits on a few thousand units: seconds
    log:
        log_path("arena/{judge}/{scope}/label_anchored.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    script:
        "../scripts/label_anchored.py"
