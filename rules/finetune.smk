# MARS judges: one binary classifier per metric, trained on every pair's synthetic data and
# early-stopped on held-out synthetic questions, never on the reference set that PPI corrects
# with (a GPU job for fine-tuned encoders).


rule mars_judge:
    input:
        synthetic=expand("results/mars/synthetic/{pair}.parquet", pair=MARS_PAIRS),
    output:
        judge="results/mars/judges/{metric}/judge.json",
        history="results/mars/judges/{metric}/history.csv",
    params:
        judge=MARS and MARS["judge"],
        cache_dir=config["cache_dir"],
        seed=config["seed"],
    log:
        "logs/mars/judges/{metric}.log",
    benchmark:
        "results/benchmarks/mars/judges/{metric}.tsv"
    threads: mars_judge_resource("threads")
    resources:
        gpu=mars_judge_resource("gpu"),
        mem_mb=mars_judge_resource("mem_mb"),
        runtime=mars_judge_resource("runtime"),
    conda:
        "../envs/train.yaml"
    script:
        "../scripts/mars_judge.py"
