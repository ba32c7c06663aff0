"""``support_entailment`` and ``support_neutral``: does each answer sentence follow from the passages
it cites (of those its system was given)? An NLI model (default ``MoritzLaurer/mDeBERTa-v3-base-xnli-multilingual-nli-2mil7``)
scores every (cited passage, sentence) pair; the features are the mean entailment and neutral
probabilities over the answer's pairs, null for an answer that cites nothing.

Label indices are read from the model's ``id2label``, never assumed.
"""

from __future__ import annotations

from collections.abc import Sequence

from polyrag.features.sentences import cited_sentences
from polyrag.systems.passages import given_passages
from polyrag.torch_runtime import resolve_device, to_precision

DEFAULT_NLI_MODEL = "MoritzLaurer/mDeBERTa-v3-base-xnli-multilingual-nli-2mil7"


def label_index(id2label: dict, name: str) -> int:
    """The output index whose label starts with ``name`` (entailment, neutral, contradiction)."""
    matches = [int(i) for i, label in id2label.items() if str(label).lower().startswith(name)]
    if len(matches) != 1:
        raise ValueError(f"the NLI model's id2label {id2label} has no single {name!r} label")
    return matches[0]


class NLIScorer:
    """A sequence-pair classifier from the Hub (or a local path), batched, in ``dtype``
    (``torch_runtime.PRECISIONS``; its probabilities are computed in float32 whatever it runs in)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 32, max_length: int = 512,
                 dtype: str = "float32"):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self._torch = torch
        self.device = resolve_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.model = to_precision(AutoModelForSequenceClassification.from_pretrained(model).to(self.device).eval(), dtype)
        id2label = self.model.config.id2label
        self.entailment = label_index(id2label, "entail")
        self.neutral = label_index(id2label, "neutral")
        self.batch_size = batch_size
        self.max_length = max_length

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]):
        """(n, labels) softmax probabilities, the premise truncated first when too long."""
        torch = self._torch
        out = []
        for start in range(0, len(premises), self.batch_size):
            enc = self.tokenizer(list(premises[start : start + self.batch_size]),
                                 list(hypotheses[start : start + self.batch_size]),
                                 truncation="only_first", max_length=self.max_length, padding=True,
                                 return_tensors="pt").to(self.device)
            with torch.no_grad():
                out.append(torch.softmax(self.model(**enc).logits.float(), dim=-1).cpu())
        return torch.cat(out).numpy() if out else torch.zeros((0, self.model.config.num_labels)).numpy()


def support_features(scorer: NLIScorer, records: list[dict], answers: list[dict]) -> list[dict]:
    pairs, owners = [], []
    for k, (record, answer) in enumerate(zip(records, answers)):
        if not answer["answer"]:
            continue
        passages = {p["docid"]: p["text"] for p in given_passages(answer, record)}
        for sentence, docids in cited_sentences(answer["answer"], record["language"], list(passages)):
            for docid in docids:
                pairs.append((passages[docid], sentence))
                owners.append(k)
    probabilities = scorer.probabilities([p for p, _ in pairs], [h for _, h in pairs])
    rows = [{"query_id": r["query_id"], "support_entailment": None, "support_neutral": None} for r in records]
    for k in set(owners):
        mine = [i for i, owner in enumerate(owners) if owner == k]
        rows[k]["support_entailment"] = float(probabilities[mine, scorer.entailment].mean())
        rows[k]["support_neutral"] = float(probabilities[mine, scorer.neutral].mean())
    return rows
