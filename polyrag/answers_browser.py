"""The answers browser: one self-contained HTML page to read what the systems answered.

Choose a language and a question, then two systems: each one's answer side by side with the
passages it was given (the ones it cited marked), the arena judge's verdicts for that pair on that
question, and every system's answer to it below. The page opens on a judged pair (``start``): the
first question, in the languages' order, that the judge judged, with its best-placed pair. The data travel as one JSON block inside the page
and the page's script writes them with ``textContent`` only, so model and data text (untrusted: an
answer may hold ``<script>``) is always shown as text, never parsed as HTML. No network resources.
Passages shared by several systems (the question's own, a retriever's) are stored once.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence

import pandas as pd

from polyrag.errors import DataError
from polyrag.systems.passages import given_passages


def browser_data(questions: Mapping[str, pd.DataFrame], answers: Mapping[tuple[str, str], pd.DataFrame],
                 games: Mapping[str, pd.DataFrame], models: Sequence[str], judge: str | None,
                 model_languages: Mapping[str, Sequence[str]] | None = None) -> dict:
    """What the page shows, as plain JSON-able data.

    ``questions``: data/{lang}.parquet by language; ``answers``: answers/{model}/{lang}.parquet
    by (model, language); ``games``: the judge's games by language (judgments/{judge}/{lang}/games.parquet;
    a language without games has none); ``models`` in the order the page lists them (the leaderboard's);
    ``model_languages``: the languages each model answers (default: every one), where alone it must
    have answers (a model that was not asked a language has no answers there, not empty ones)."""
    passages: list[dict[str, str]] = []
    passage_index: dict[tuple[str, str, str], int] = {}

    def index(passage: Mapping[str, str]) -> int:
        key = (passage["docid"], passage["title"], passage["text"])
        if key not in passage_index:
            passage_index[key] = len(passages)
            passages.append(dict(passage))
        return passage_index[key]

    languages, by_language, not_asked = list(questions), {}, {}
    for lang in languages:
        records = {str(record["query_id"]): record for record in questions[lang].to_dict("records")}
        shown = {query_id: {"id": query_id, "query": record["query"],
                            "reference": none_if_missing(record.get("reference_answer")), "answers": {}, "verdicts": {}}
                 for query_id, record in records.items()}
        for model in models:
            if model_languages is not None and lang not in model_languages.get(model, languages):
                not_asked.setdefault(lang, []).append(model)  # no answer shown, none missing
                continue
            if (model, lang) not in answers:
                raise DataError(f"no answers file of model {model!r} in language {lang!r} was given to the answers browser")
            for answer in answers[model, lang].to_dict("records"):
                query_id = str(answer["query_id"])
                if query_id not in records:
                    raise DataError(f"answers/{model}/{lang}.parquet answers question {query_id!r}, which "
                                    f"data/{lang}.parquet (in the results folder) does not hold: rerun its generation")
                given = given_passages(answer, records[query_id])
                shown[query_id]["answers"][model] = {
                    "answer": none_if_missing(answer.get("answer")), "error": none_if_missing(answer.get("error")),
                    "cited": [str(docid) for docid in cited_docids(answer)],
                    "passages": [index(passage) for passage in given]}
        table = games.get(lang)
        for game in ([] if table is None else table.to_dict("records")):
            query_id, a, b = str(game["query_id"]), str(game["model_a"]), str(game["model_b"])
            if query_id not in shown:
                continue  # a question the data no longer hold (a stale games file) has nothing to show
            winner = {"model_a": a, "model_b": b}.get(game["verdict"], game["verdict"])  # else tie / invalid
            pair = "__".join(sorted((a, b)))
            shown[query_id]["verdicts"].setdefault(pair, []).append({"shown_first": str(game["shown_first"]),
                                                                    "verdict": winner})
        by_language[lang] = list(shown.values())
    return {"languages": languages, "models": list(models), "judge": judge, "passages": passages,
            "questions": by_language, "not_asked": not_asked, "start": first_judged(by_language, list(models))}


def first_judged(by_language: Mapping[str, list[dict]], models: list[str]) -> dict:
    """Where the page opens: the first question (languages in their order, questions in the data's)
    with a verdict on a pair of listed systems, and of its pairs the one whose systems come first in
    ``models`` (the leaderboard's order); without any verdict, the first question and the first two
    systems."""
    position = {model: k for k, model in enumerate(models)}
    for lang, questions in by_language.items():
        for question in questions:
            pairs = [pair.split("__") for pair in question["verdicts"]]
            pairs = [sorted(pair, key=position.get) for pair in pairs if all(model in position for model in pair)]
            if pairs:
                left, right = min(pairs, key=lambda pair: sorted(position[model] for model in pair))
                return {"lang": lang, "question": question["id"], "left": left, "right": right}
    lang = next((lang for lang, questions in by_language.items() if questions), None)
    return {"lang": lang, "question": by_language[lang][0]["id"] if lang else None,
            "left": models[0] if models else None, "right": models[1] if len(models) > 1 else None}


def cited_docids(answer: Mapping) -> list:
    cited = answer.get("cited_docids")
    return [] if cited is None else list(cited)  # an error row may hold null


def none_if_missing(value):
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def script_json(data: dict) -> str:
    """``data`` as JSON that cannot end the <script> element holding it: ``<``, ``>`` and ``&`` as
    \\u escapes (JSON.parse reads them back as the same characters)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def answers_page(data: dict, title: str = "Answers") -> str:
    """The browser page for ``browser_data``'s ``data``."""
    return PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", script_json(data))


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 12px; color: #1f2937; }
label { margin-right: 14px; }
select { max-width: 40em; }
#query { font-size: 16px; font-weight: 600; margin: 12px 0 4px; white-space: pre-wrap; }
#reference, #verdict { color: #4b5563; margin: 4px 0; white-space: pre-wrap; }
#columns { display: flex; gap: 16px; align-items: flex-start; }
.system { flex: 1 1 0; min-width: 0; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
.answer { white-space: pre-wrap; background: #f9fafb; padding: 8px; border-radius: 4px; }
.error { color: #b91c1c; white-space: pre-wrap; }
.passage { margin: 6px 0; padding: 4px 8px; border-left: 4px solid #e5e7eb; white-space: pre-wrap; }
.passage.cited { border-left-color: #2563eb; background: #eff6ff; }
.badge { display: inline-block; font-size: 11px; padding: 0 6px; border-radius: 8px; background: #2563eb; color: white; margin-right: 6px; }
.docid { font-family: monospace; font-weight: 600; margin-right: 6px; }
table { border-collapse: collapse; margin-top: 8px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e5e7eb; text-align: left; vertical-align: top; }
td.text { white-space: pre-wrap; max-width: 60em; }
p.note { max-width: 60em; color: #4b5563; }
</style></head>
<body><h2>__TITLE__</h2>
<p class="note">Each system's answer to one question beside the passages it was given (the cited ones marked, in blue),
and the arena judge's verdicts for the chosen pair (both orders where it judged them; only the arena sample of questions
is judged).</p>
<div>
<label>Language <select id="lang"></select></label>
<label>Question <select id="question"></select></label>
<label>Left <select id="left"></select></label>
<label>Right <select id="right"></select></label>
</div>
<div id="query"></div>
<div id="reference"></div>
<div id="verdict"></div>
<div id="columns"></div>
<h3>Every system's answer</h3>
<table id="all"><thead><tr><th>system</th><th>answer</th><th>cited</th></tr></thead><tbody></tbody></table>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);

function element(tag, className, text) {  // model and data text only ever as textContent
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function fill(select, values, labels) {
  select.replaceChildren(...values.map((value, i) => {
    const option = element("option", null, labels ? labels[i] : value);
    option.value = value;
    return option;
  }));
}

function question() {
  return data.questions[$("lang").value].find((q) => q.id === $("question").value);
}

function systemColumn(q, model) {
  const column = element("div", "system");
  column.dataset.model = model;
  column.append(element("h3", null, model));
  const answer = q.answers[model];
  if (!answer) {
    column.append(element("p", "error", notAsked(model) ? NOT_ASKED : "no answer in this system's answers file"));
    return column;
  }
  column.append(element("div", "answer", answer.answer === null ? "(no answer)" : answer.answer));
  if (answer.error) column.append(element("p", "error", "error: " + answer.error));
  const cited = new Set(answer.cited);
  column.append(element("h4", null, answer.passages.length + " passages given, " + cited.size + " cited"));
  for (const i of answer.passages) {
    const passage = data.passages[i];
    const item = element("div", cited.has(passage.docid) ? "passage cited" : "passage");
    item.dataset.docid = passage.docid;
    if (cited.has(passage.docid)) item.append(element("span", "badge", "cited"));
    item.append(element("span", "docid", passage.docid));
    if (passage.title) item.append(element("strong", null, passage.title + " "));
    item.append(document.createTextNode(passage.text));
    column.append(item);
  }
  return column;
}

const NOT_ASKED = "not asked in this language (its languages: leave it out)";

function notAsked(model) {
  return (data.not_asked[$("lang").value] || []).includes(model);
}

function verdictText(q, left, right) {
  if (left === right) return "Choose two different systems to see the judge's verdict.";
  const games = q.verdicts[[left, right].sort().join("__")];
  if (!data.judge) return "No arena judge in this run.";
  if (!games) return data.judge + " did not judge " + left + " vs " + right + " on this question.";
  return data.judge + ": " + games.map((game) => "with " + game.shown_first + " shown first: " +
    (game.verdict === "tie" || game.verdict === "invalid" ? game.verdict : game.verdict + " wins")).join("; ");
}

function show() {
  const q = question();
  const left = $("left").value, right = $("right").value;
  $("query").textContent = q.id + ": " + q.query;
  $("reference").textContent = q.reference === null ? "" : "Reference answer: " + q.reference;
  $("verdict").textContent = verdictText(q, left, right);
  $("columns").replaceChildren(systemColumn(q, left), systemColumn(q, right));
  $("all").tBodies[0].replaceChildren(...data.models.map((model) => {
    const row = element("tr");
    const answer = q.answers[model];
    row.append(element("td", null, model),
               element("td", "text", answer ? (answer.answer === null ? "error: " + answer.error : answer.answer)
                                       : (notAsked(model) ? NOT_ASKED : "no answer")),
               element("td", null, answer ? answer.cited.join(", ") : ""));
    return row;
  }));
}

function fillQuestions() {
  const questions = data.questions[$("lang").value];
  fill($("question"), questions.map((q) => q.id), questions.map((q) => q.id + ": " + q.query.slice(0, 80)));
}

fill($("lang"), data.languages);
fill($("left"), data.models);
fill($("right"), data.models);
// open on a judged pair (browser_data's start), its verdict shown
if (data.start.lang !== null) $("lang").value = data.start.lang;
fillQuestions();
if (data.start.question !== null) $("question").value = data.start.question;
if (data.start.left !== null) $("left").value = data.start.left;
if (data.start.right !== null) $("right").value = data.start.right;
$("lang").addEventListener("change", () => { fillQuestions(); show(); });
for (const id of ["question", "left", "right"]) $(id).addEventListener("change", show);
show();
</script>
</body></html>
"""
