"""LLM-as-a-judge on MEMERAG sentences with MEMERAG's four faithfulness prompts.

Prompts (``polyrag/prompts/meta_eval/``): ``zero_shot``, ``cot`` (chain of thought), ``ag``
(annotation guidelines) and ``ag_cot``. Unlike the published prompts, the question is included
(``include_question: false`` reproduces them) and passages go in as written, never HTML-escaped.
The label is read from the last ``<answer>`` tag; an output without one is asked again, up to
``max_attempts``, then the prediction is null (summaries count it wrong, and also excluded).
A judge that cannot be reached fails the job (``LLMUnavailable``); it never becomes a null prediction.
Relevance uses one zero-shot prompt (``Relevant`` / ``Unrelated``).
"""

from __future__ import annotations

import re

import pandas as pd

from polyrag.llm.client import LLM
from polyrag.llm.retry import ask_until_parsed
from polyrag.meta_eval.memerag import task_rows
from polyrag.prompts import render

PROMPTS = ("zero_shot", "cot", "ag", "ag_cot")
REASONING = {"zero_shot": False, "cot": True, "ag": False, "ag_cot": True}
ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
LABELS = {"faithfulness": {"supported": 1, "not supported": 0}, "relevance": {"relevant": 1, "unrelated": 0}}


def parse_label(output: str | None, task: str) -> int | None:
    """The label in the last ``<answer>`` tag (quotes and a final period ignored), else None."""
    if not output:
        return None
    tags = ANSWER_TAG.findall(output)
    if not tags:
        return None
    text = tags[-1].strip().strip("\"'*.").strip().lower()
    return LABELS[task].get(text)


def judge_messages(row, task: str, prompt: str, include_question: bool) -> list[dict[str, str]]:
    """The chat messages for one sentence, rendered from that sentence's own fields."""
    if task == "relevance":
        return [{"role": "system", "content": render("meta_eval/system_relevance.j2")},
                {"role": "user", "content": render("meta_eval/task_relevance.j2", question=row.query,
                                                   sentence=row.sentence)}]
    return [{"role": "system", "content": render(f"meta_eval/system_{prompt}.j2")},
            {"role": "user", "content": render("meta_eval/task_faithfulness.j2",
                                               question=row.query if include_question else None,
                                               passages=list(row.context), sentence=row.sentence,
                                               reasoning=REASONING[prompt])}]


def llm_predictions(llm: LLM, sentences: pd.DataFrame, tasks: list[str], prompts: list[str], settings: dict) -> pd.DataFrame:
    """Sentence-level predictions of one LLM judge for every task and prompt."""
    frames = []
    for task in tasks:
        rows = task_rows(sentences, task)
        for prompt in (prompts if task == "faithfulness" else ["zero_shot"]):
            messages = [judge_messages(row, task, prompt, settings["include_question"]) for row in rows.itertuples()]
            parsed = ask_until_parsed(llm, messages, lambda text, task=task: parse_label(text, task),
                                      max_attempts=settings["max_attempts"],
                                      max_failure_fraction=settings["max_failure_fraction"],
                                      failure_setting="meta_eval.max_failure_fraction",
                                      temperature=settings["temperature"],
                                      max_tokens=settings["max_tokens"], seed=settings["seed"],
                                      desc=f"{task} {prompt}")
            frames.append(rows.assign(prompt=prompt, prediction=[p.value for p in parsed],
                                      raw_output=[p.raw_output for p in parsed], calls=[p.calls for p in parsed]))
    table = pd.concat(frames, ignore_index=True)
    table["prediction"] = table["prediction"].astype("Int64")
    return table[["lang", "query_id", "sentence_id", "task", "prompt", "label", "prediction",
                  "fine_grained_factuality", "raw_output", "calls"]]
