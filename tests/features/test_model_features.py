"""Model-based features on tiny random models built here: the code paths and shapes, and the label
mapping checked against a direct forward pass."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is installed by `make test`")

from polyrag.features.reranker import Reranker, reranker_features  # noqa: E402
from polyrag.features.support import NLIScorer, label_index, support_features  # noqa: E402

from tests.helpers.environment import ON_CUDA, TORCH_TEST_DEVICE as DEVICE  # noqa: E402
from tests.helpers.tiny_models import sequence_classifier  # noqa: E402

# Batches of other sizes pad differently; CUDA's float32 kernels differ from one batch shape to
# another by more than CPU's do.
TOLERANCE = 1e-5 if ON_CUDA else 1e-6

ID2LABEL = {0: "neutral", 1: "contradiction", 2: "entailment"}  # not the usual order, on purpose


@pytest.fixture(scope="module")
def nli_path(tmp_path_factory):
    return sequence_classifier(tmp_path_factory.mktemp("nli"), ID2LABEL)


@pytest.fixture(scope="module")
def reranker_path(tmp_path_factory):
    return sequence_classifier(tmp_path_factory.mktemp("reranker"), {0: "LABEL_0"})


def records_and_answers():
    passages = [{"docid": "a#0", "title": "", "text": "The Niger River flows into the Gulf of Guinea ."},
                {"docid": "b#0", "title": "", "text": "Mozart was born in Salzburg in 1756 ."}]
    records = [{"query_id": str(i), "query": "Niger River ?", "language": lang, "passages": passages}
               for i, lang in enumerate(["en", "zh", "hi", "en"])]
    answers = [
        {"answer": "The Niger flows into the Gulf of Guinea [a#0]. Mozart was born in Salzburg [b#0][a#0].", "cited_docids": ["a#0", "b#0"]},
        {"answer": "尼日尔河 注入 几内亚湾 [a#0]。", "cited_docids": ["a#0"]},
        {"answer": "नाइजर नदी गिनी की खाड़ी में गिरती है [a#0]।", "cited_docids": ["a#0"]},
        {"answer": "No citation here.", "cited_docids": []},
    ]
    return records, answers


def test_label_indices_come_from_the_config():
    assert label_index(ID2LABEL, "entail") == 2 and label_index(ID2LABEL, "neutral") == 0
    with pytest.raises(ValueError, match="no single 'entail' label"):
        label_index({0: "yes", 1: "no"}, "entail")


def test_support_features(nli_path):
    scorer = NLIScorer(str(nli_path), device=DEVICE, batch_size=2)
    records, answers = records_and_answers()
    rows = support_features(scorer, records, answers)
    assert [r["query_id"] for r in rows] == ["0", "1", "2", "3"]
    assert rows[3]["support_entailment"] is None  # cites nothing
    # Independent computation for the first answer: its 3 (passage, sentence) pairs by hand.
    model, tokenizer = scorer.model, scorer.tokenizer
    premises = [records[0]["passages"][0]["text"], records[0]["passages"][1]["text"], records[0]["passages"][0]["text"]]
    hypotheses = ["The Niger flows into the Gulf of Guinea.", "Mozart was born in Salzburg.", "Mozart was born in Salzburg."]
    with torch.no_grad():
        logits = model(**tokenizer(premises, hypotheses, padding=True, return_tensors="pt").to(DEVICE)).logits
    probabilities = torch.softmax(logits, dim=-1).cpu().numpy()
    assert rows[0]["support_entailment"] == pytest.approx(probabilities[:, 2].mean(), abs=TOLERANCE)
    assert rows[0]["support_neutral"] == pytest.approx(probabilities[:, 0].mean(), abs=TOLERANCE)
    for row in rows[:3]:
        assert 0 <= row["support_entailment"] <= 1 and row["support_entailment"] + row["support_neutral"] <= 1 + 1e-6


def test_reranker_features(reranker_path):
    reranker = Reranker(str(reranker_path), device=DEVICE, batch_size=3)
    records, answers = records_and_answers()
    rows = reranker_features(reranker, records, answers)
    assert rows[3]["reranker_score"] is None
    direct = reranker.scores([("Niger River ?", records[0]["passages"][0]["text"]), ("Niger River ?", records[0]["passages"][1]["text"])])
    assert rows[0]["reranker_score"] == pytest.approx(np.mean(direct), abs=TOLERANCE if ON_CUDA else None)
    assert rows[1]["reranker_score"] == pytest.approx(direct[0], abs=TOLERANCE if ON_CUDA else None)


def test_meta_eval_nli_scores_take_the_best_passage(nli_path):
    """The MEMERAG NLI evaluator: per sentence, the highest entailment probability over its passages,
    checked against scoring each (passage, sentence) pair on its own."""
    import pandas as pd

    from polyrag.meta_eval.evaluators import nli_scores

    scorer = NLIScorer(str(nli_path), device=DEVICE, batch_size=2)
    passages = ["The Niger River flows into the Gulf of Guinea .", "Mali is a country .", "Rivers flow ."]
    sentences = pd.DataFrame([
        {"lang": "en", "query_id": str(k), "query": "q", "context": passages[: k + 1], "sentence_id": 0,
         "sentence": sentence, "factuality": "Supported", "fine_grained_factuality": None,
         "relevance": "Directly answers the question", "faithful": 1, "relevant": 1}
        for k, sentence in enumerate(["The Niger flows .", "Mali is big .", "Rivers flow into seas ."])])
    scores = nli_scores(sentences, scorer)
    for k, row in scores.iterrows():
        context = passages[: k + 1]
        one_by_one = [scorer.probabilities([p], [sentences["sentence"][k]])[0, scorer.entailment] for p in context]
        assert row["score"] == pytest.approx(max(one_by_one), abs=1e-5)
    assert list(scores["task"]) == ["faithfulness"] * 3


def test_nli_features_in_bfloat16_agree_with_float32(nli_path):
    """features.nli.dtype: bfloat16 runs the classifier's weights in 16 bits (on a GPU: several times
    float32's pairs/s); its probabilities are taken in float32, within bfloat16's precision of the
    float32 model's."""
    records, answers = records_and_answers()
    full, half = (support_features(NLIScorer(str(nli_path), device=DEVICE, batch_size=2, dtype=dtype), records, answers)
                  for dtype in ("float32", "bfloat16"))
    assert [r["support_entailment"] is None for r in half] == [r["support_entailment"] is None for r in full]
    for a, b in zip(full[:3], half[:3]):
        assert b["support_entailment"] == pytest.approx(a["support_entailment"], abs=0.02)
        assert b["support_neutral"] == pytest.approx(a["support_neutral"], abs=0.02)
    assert next(NLIScorer(str(nli_path), device=DEVICE, dtype="bfloat16").model.parameters()).dtype == torch.bfloat16
