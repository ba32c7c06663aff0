"""The fine-tuned student against its control: the same base served the same way, without the
adapter (polyrag.finetune.gain, finetune.control)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
def reference_games(parts_by_question: dict, student="sft", control="sft-base") -> pd.DataFrame:
    """Games of the reference judge between student and control, both orders, its raw output
    holding each answer's parts (None: the answer did not parse)."""
    rows = []
    for query_id, (student_parts, control_parts) in parts_by_question.items():
        scores = {student: student_parts, control: control_parts}
        for name, parts in scores.items():
            if parts is not None:
                parts["total"] = 0.4 * parts["similarity"] + 0.3 * parts["citation"] + 0.3 * parts["language"]
        totals = {name: (-1.0 if parts is None else parts["total"]) for name, parts in scores.items()}
        a, b = sorted([student, control])
        verdict = "tie" if totals[a] == totals[b] else "model_a" if totals[a] > totals[b] else "model_b"
        for first in (a, b):
            rows.append({"query_id": query_id, "model_a": a, "model_b": b, "shown_first": first, "verdict": verdict,
                         "raw_output": json.dumps({"letter": "A", **scores})})
    return pd.DataFrame(rows)


def test_gain_over_control_breaks_the_judges_criteria_out_with_t_intervals():
    """A student that gains only in language: its score over the control is high, but only the
    language criterion's interval excludes 0. Per language each criterion's interval is the
    plain t interval over questions (scipy); 'all' pools languages as strata."""
    from scipy import stats

    from polyrag.finetune.gain import gain_over_control

    rng = np.random.default_rng(3)
    games, language_gain = {}, {}
    for lang in ("en", "de"):
        parts = {}
        for q in range(12):
            shared = {"similarity": rng.uniform(0.5, 0.9), "citation": rng.choice([0.0, 1.0])}
            noise = {"similarity": rng.normal(0, 0.02), "citation": 0.0}
            parts[f"q{q}"] = ({**{k: shared[k] + noise[k] for k in shared}, "language": rng.uniform(0.8, 1.0)},
                              {**shared, "language": rng.uniform(0.0, 0.4)})
        parts["q12"] = (None, {"similarity": 0.5, "citation": 0.0, "language": 1.0})  # unparsed: loses, no criteria
        games[lang] = reference_games(parts)
        language_gain[lang] = [s["language"] - c["language"] for s, c in parts.values() if s is not None]
    table = gain_over_control(games, "sft", "sft-base", reference_judge=True).set_index("lang")
    for lang in ("en", "de"):
        row = table.loc[lang]
        assert (row["questions"], row["questions_both_parsed"], row["games"]) == (13, 12, 26)
        assert row["control_wins"] >= 2  # the unparsed answer's question, both orders
        low, high = stats.t.interval(0.95, 11, loc=np.mean(language_gain[lang]), scale=stats.sem(language_gain[lang]))
        assert (row["language_gain"], row["language_ci_low"], row["language_ci_high"]) == pytest.approx(
            (np.mean(language_gain[lang]), low, high))
    every = table.loc["all"]
    assert every["questions"] == 26 and every["language_ci_low"] > 0.4
    assert every["similarity_ci_low"] < 0 < every["similarity_ci_high"] or abs(every["similarity_gain"]) < 0.02
    assert every["citation_gain"] == 0 and every["score"] > 0.8
    assert (table["score_ci_high"] <= 1).all() and (table["score_ci_low"] <= table["score"]).all()
    # Without the reference judge's scores (another judge), the verdicts alone.
    verdicts_only = gain_over_control(games, "sft", "sft-base", reference_judge=False)
    assert "language_gain" not in verdicts_only and verdicts_only["score"].tolist() == table["score"].tolist()


def test_the_control_is_the_student_served_the_same_way_without_the_adapter(repo):
    from polyrag.config.queries import control_name
    from polyrag.config.validate import validate_config

    config = validate_config(yaml.safe_load((repo / "configs" / "demo-full.yaml").read_text()),
                             repo / "schemas" / "config.schema.yaml")
    student, control = config["models"]["gemma-270m-sft"], config["models"][control_name(config)]
    assert control_name(config) == "gemma-270m-sft-base" and "adapter" not in control
    # On llama.cpp the control's adapted matrices are re-quantized as the student's merge does.
    assert control["adapter_modules"] == sorted(config["finetune"]["lora"]["target_modules"])
    assert {k: v for k, v in student.items() if k != "adapter"} == {
        k: v for k, v in control.items() if k != "adapter_modules"}
    config["finetune"]["control"] = False
    config["checks"]["finetune_gain"] = False  # the gain over the control is then not there to check
    config["models"].pop("gemma-270m-sft-base")
    config["judges"]["cite-check"]["contestants"].remove("gemma-270m-sft-base")
    assert control_name(validate_config(config, repo / "schemas" / "config.schema.yaml")) is None
