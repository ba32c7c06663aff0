"""The label-anchored arena end to end (real Snakemake, mock systems, two offline judges): the
stand-in labeller fills the exported tasks, then a person's file replaces it for one language,
and the tables are rebuilt from what the file says."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.helpers.workflow import snakemake, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

MOCKS = {f"mock-{rate}": {"backend": "mock", "error_rate": rate / 100} for rate in (0, 20, 50, 80)}
JUDGES = {"reference": {"backend": "reference"},
          "cite-check": {"backend": "reference", "weights": {"similarity": 0.0, "citation": 1.0, "language": 1.0}}}
HUMAN_LABELS = {"judge": "cite-check", "sample": {"count": 30}, "stand_in": "reference"}
TARGET = "results/arena/cite-check/all/label_anchored.csv"


def human_labels_config(repo, workdir, **human_labels):
    config = tiny_config(repo, workdir, languages=("en", "de"), features={"embedding_similarity": False},
                         judges=JUDGES, **MOCKS)
    config["data"].update({"max_questions": 12, "arena_queries": 12})
    config["arena"]["human_labels"] = {**HUMAN_LABELS, **human_labels}
    (workdir / "config.yaml").write_text(json.dumps(config))
    return config


def test_label_anchored_round_trip(repo, tmp_path):
    human_labels_config(repo, tmp_path)
    result = snakemake(repo, tmp_path, "--cores", "2", TARGET)
    assert result.returncode == 0, result.stderr[-3000:]
    results = tmp_path / "results"
    labelled = 0
    for lang in ("en", "de"):
        key = pd.read_csv(results / "human_labels" / lang / "key.csv")
        units = pd.read_parquet(results / "arena" / "cite-check" / lang / "units.parquet")
        assert len(units) == 12 * 6 and len(key) == 30 and set(key["unit_id"]) <= set(units["unit_id"])
        tasks = pd.read_csv(results / "human_labels" / lang / "tasks.csv", keep_default_na=False)
        assert list(tasks["unit_id"]) == list(key["unit_id"]) and (tasks["label"] == "").all()
        assert not any(model in (results / "human_labels" / lang / "tasks.csv").read_text() for model in MOCKS)
        counts = json.loads((results / "human_labels" / lang / "label_counts.json").read_text())
        assert counts["sampled"] == 30 and counts["labelled"] + counts["cant_judge"] + counts["missing"] == 30
        labelled += counts["labelled"]
    table = pd.read_csv(tmp_path / TARGET)
    assert (table["n_units"] == 144).all() and (table["n_labels"] == labelled).all() and (table["scope"] == "all").all()
    # The mock systems' corrupted shares order them; the label-anchored logits follow the stand-in's.
    assert table.sort_values("logit", ascending=False)["model"].tolist()[0] == "mock-0"
    assert table.set_index("model").loc["mock-80", "rank_worst"] == 4
    agreement = pd.read_csv(results / "arena" / "cite-check" / "all" / "label_agreement.csv").set_index("metric")
    assert agreement.loc["agreement", "value"] > agreement.loc["chance_agreement", "value"]

    # A person labels en instead: every task "tie" except one can't-judge and one left blank.
    filled = pd.read_csv(results / "human_labels" / "en" / "tasks.csv", keep_default_na=False)
    filled["label"] = "tie"
    filled.loc[0, "label"], filled.loc[1, "label"] = "Can't judge", ""
    filled[["unit_id", "label"]].to_csv(tmp_path / "en_filled.csv", index=False)
    human_labels_config(repo, tmp_path, labels={"en": str(tmp_path / "en_filled.csv")})
    result = snakemake(repo, tmp_path, "--cores", "2", TARGET)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = json.loads((results / "human_labels" / "en" / "label_counts.json").read_text())
    assert counts == {"source": str(tmp_path / "en_filled.csv"), "sampled": 30, "labelled": 28, "ties": 28,
                      "cant_judge": 1, "missing": 1}
    assert (pd.read_parquet(results / "human_labels" / "en" / "labels.parquet")["label_value"] == 0.5).all()
    assert "1 were judged can't judge and 1 have no label" in (tmp_path / "results/logs/human_labels/en/labels.log").read_text()

    # A row naming a unit outside the sample stops the job with the file and row.
    pd.DataFrame({"unit_id": ["u000000000000"], "label": ["left"]}).to_csv(tmp_path / "en_filled.csv", index=False)
    result = snakemake(repo, tmp_path, "--cores", "2", TARGET)
    assert result.returncode != 0
    assert "en_filled.csv: row 2: unit_id 'u000000000000' is not in the sample" in (
        tmp_path / "results/logs/human_labels/en/labels.log").read_text()
