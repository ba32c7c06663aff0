"""MARS-style mock RAG systems: answers built from gold data with a known, controlled error rate.

Of the n questions in one batch (one language), exactly ``round(error_rate * n)`` are corrupted,
chosen by a seeded permutation, so the realised error rate equals the configured one up to
rounding. Corrupted answers cycle through the configured corruption kinds:

- ``wrong_language``: the answer to some question in another language;
- ``non_relevant_citation``: the correct answer, citing a non-relevant passage;
- ``non_relevant_answer``: the first sentence of a non-relevant passage, citing it;
- ``refusal``: a refusal in the question's language (``prompts/mock_refusal.yaml``; a language
  missing there is an error, never an English fallback), without citations. It is also the
  answer of the other corruptions for a question whose passages are all relevant.

A *grounded* mock (``grounded=True``) has no error rate: its answer is right exactly when a
relevant passage is among the passages it was given (``Request.context["passages"]``, those of its
prompt), so its true quality is the share of questions where it was given one (with a retriever:
the retriever's success@k). Right: the reference answer citing the relevant given passages it
cites (else the first relevant given passage), or without a reference answer the first sentence of
the first relevant given passage citing it. Wrong: the first sentence of the first passage it was
given, citing it; a refusal when it was given none (closed-book). Relevance is the question's labels'
(``relevant_docids``); a passage nobody labelled does not make it right.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np

from polyrag.answer_parsing import parse_citations
from polyrag.errors import DataError
from polyrag.llm.base import Backend
from polyrag.seeds import rng_for
from polyrag.llm.types import Request, Response

CORRUPTIONS = ("wrong_language", "non_relevant_citation", "non_relevant_answer", "refusal")
SENTENCE_PUNCT = ".!?。！？।؟"
SENTENCE_END = re.compile(rf"(?<=[{SENTENCE_PUNCT}])\s*")
CITATION_GROUP = re.compile(r"\s*\[[^\[\]\n]+\]")


def first_sentence(text: str) -> str:
    parts = [p for p in SENTENCE_END.split(text.strip()) if p]
    return parts[0] if parts else text.strip()


def with_citation(answer: str, citation: str) -> str:
    """``answer`` with its citations replaced by ``citation``, before its final punctuation."""
    text = CITATION_GROUP.sub("", answer).rstrip()
    body, end = (text[:-1], text[-1]) if text and text[-1] in SENTENCE_PUNCT else (text, "")
    return f"{body} {citation}{end}"


def corrupted_indices(n: int, error_rate: float, rng: np.random.Generator) -> list[int]:
    """Exactly ``round(error_rate * n)`` distinct indices, in a seeded random order."""
    return [int(i) for i in rng.permutation(n)[: int(round(error_rate * n))]]


class MockBackend(Backend):
    name = "mock"
    cacheable = False

    def __init__(self, model_name: str, error_rate: float | None = None, corruptions: Sequence[str] = CORRUPTIONS,
                 seed: int = 0, grounded: bool = False):
        unknown = set(corruptions) - set(CORRUPTIONS)
        if unknown or not corruptions:
            raise ValueError(f"mock model {model_name!r}: corruptions must be a non-empty subset of {CORRUPTIONS}")
        if grounded != (error_rate is None):
            raise ValueError(f"mock model {model_name!r}: needs an error_rate, or grounded (and no error_rate)")
        if not grounded and not 0.0 <= error_rate <= 1.0:
            raise ValueError(f"mock model {model_name!r}: error_rate must lie in [0, 1], got {error_rate}")
        self.identity = model_name
        self.error_rate = error_rate
        self.corruptions = tuple(corruptions)
        self.seed = seed
        self.grounded = grounded

    @staticmethod
    def correct_answer(ctx: dict) -> tuple[str, str]:
        """(reason, answer) from the reference, or from the first relevant passage when there is none."""
        if ctx.get("reference_answer"):
            reason = ctx.get("reference_reason") or ""
            return reason, ctx["reference_answer"]
        relevant = [p for p in ctx["passages"] if p["docid"] in set(ctx["relevant_docids"])]
        passage = relevant[0]
        answer = f"{first_sentence(passage['text'])} [{passage['docid']}]"
        return f"[{passage['docid']}]", answer

    def refusal(self, ctx: dict) -> tuple[str, str]:
        if not ctx.get("refusal"):
            raise DataError(f"mock model {self.identity!r}: no refusal in language {ctx.get('language')!r} "
                            "in polyrag/prompts/mock_refusal.yaml; add one")
        return "", ctx["refusal"]

    def grounded_answer(self, ctx: dict) -> tuple[str, str]:
        """(reason, answer) of the grounded mock from the passages it was given (module docstring)."""
        given = ctx["passages"]
        relevant = [p for p in given if p["docid"] in set(ctx["relevant_docids"])]
        if not relevant:
            if not given:
                return self.refusal(ctx)
            passage = given[0]
            return f"[{passage['docid']}]", f"{first_sentence(passage['text'])} [{passage['docid']}]"
        if not ctx.get("reference_answer"):
            passage = relevant[0]
            return f"[{passage['docid']}]", f"{first_sentence(passage['text'])} [{passage['docid']}]"
        # The reference answer's own citations may name relevant passages it was not given.
        cited = parse_citations(ctx["reference_answer"], [p["docid"] for p in relevant]) or [relevant[0]["docid"]]
        citation = f"[{', '.join(cited)}]"
        return citation, with_citation(ctx["reference_answer"], citation)

    def corrupt(self, kind: str, ctx: dict, rng: np.random.Generator) -> tuple[str, str]:
        relevant = set(ctx["relevant_docids"])
        non_relevant = [p for p in ctx["passages"] if p["docid"] not in relevant]
        if kind == "wrong_language" and ctx.get("foreign_answer"):
            return "", ctx["foreign_answer"]
        if kind == "refusal" or not non_relevant:
            return self.refusal(ctx)
        passage = non_relevant[int(rng.integers(len(non_relevant)))]
        if kind == "non_relevant_citation":
            _, answer = self.correct_answer(ctx)
            return f"[{passage['docid']}]", with_citation(answer, f"[{passage['docid']}]")
        # non_relevant_answer, and wrong_language when no foreign answer exists
        return f"[{passage['docid']}]", f"{first_sentence(passage['text'])} [{passage['docid']}]"

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        if not requests:
            return
        contexts = [r.context for r in requests]
        if any(c is None for c in contexts):
            raise ValueError(f"mock model {self.identity!r} needs the question record in Request.context")
        language = contexts[0].get("language", "")
        rng = rng_for(self.seed, "mock", self.identity, language)
        corrupted = {} if self.grounded else {
            i: self.corruptions[k % len(self.corruptions)]
            for k, i in enumerate(corrupted_indices(len(requests), self.error_rate, rng))}
        for i, ctx in enumerate(contexts):
            if self.grounded:
                reason, answer = self.grounded_answer(ctx)
            elif i in corrupted:
                reason, answer = self.corrupt(corrupted[i], ctx, rng)
            else:
                reason, answer = self.correct_answer(ctx)
            if ctx.get("answer_format", "sections") == "sections":
                text = f"##Reason:\n{reason}\n\n##Answer:\n{answer}"
            else:
                text = answer
            yield i, Response(text=text)
