"""What fine-tuning did: the student against its control, the same base served the same way.

The control (``finetune.control``, model ``{name}-base``) is the student's base through the same
backend, prompt, decoding and token limit, without the adapter, so the comparison changes one
thing. Compared against the base as the rest of the demo serves it (llama.cpp, another prompt
prefix, another token limit), most of the student's apparent gain was the base being pushed into
English by its English answer prefix.

From the arena judge's games of the pair (student, control), per language and over all (``all``,
languages as strata): the student's games won, lost and tied, and its ``score`` (a win 1, a tie
0.5) with a 95% interval clustered by question (clipped to [0, 1]). When the judge is the
``reference`` judge, its three criteria are broken out as the mean difference student minus
control over the questions where both answers parsed (``similarity`` to the reference answer,
``citation`` precision, ``language``: the probability that the answer is in the question's
language, and their weighted ``total``), each with its interval: a gain that comes only from
``language`` is not a gain in answering. ``questions_both_parsed`` says how many questions that
is; a control that never writes the answer format leaves none, and the gain is the format.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from polyrag.errors import DataError
from polyrag.stats.clustered_intervals import clustered_mean_interval

CRITERIA = ["similarity", "citation", "language", "total"]
SCORE = {"student": 1.0, "control": 0.0, "tie": 0.5}


def pair_games(games: pd.DataFrame, student: str, control: str) -> pd.DataFrame:
    """The valid games between student and control, ``winner`` in student/control/tie."""
    pair = games[games["model_a"].isin([student, control]) & games["model_b"].isin([student, control])]
    pair = pair[pair["verdict"] != "invalid"]
    student_is_a = pair["model_a"] == student
    winner = np.where(pair["verdict"] == "tie", "tie",
                      np.where((pair["verdict"] == "model_a") == student_is_a, "student", "control"))
    return pair.assign(winner=winner)


def criteria_differences(games: pd.DataFrame, student: str, control: str) -> pd.DataFrame:
    """Per question: the reference judge's parts of the student's answer minus the control's, from
    the games' ``raw_output`` (both orders carry the same scores); questions where an answer did
    not parse have none, and are counted by the caller."""
    rows = []
    for query_id, raw in games.drop_duplicates("query_id")[["query_id", "raw_output"]].itertuples(index=False):
        scores = json.loads(raw)
        if student not in scores or control not in scores:
            raise DataError(f"game on question {query_id!r}: the judge's output has no scores of {student!r} and "
                            f"{control!r}; criteria are read from the reference judge's games")
        if scores[student] is None or scores[control] is None:
            continue
        rows.append({"query_id": query_id, **{c: scores[student][c] - scores[control][c] for c in CRITERIA}})
    return pd.DataFrame(rows, columns=["query_id", *CRITERIA])


def gain_rows(games: pd.DataFrame, lang: str, strata: np.ndarray | None, with_criteria: bool,
              differences: pd.DataFrame | None) -> dict:
    """One row of ``gain_over_control`` over ``games`` (a ``lang`` column) and the criteria's
    per-question ``differences``; ``strata``: the games' language, for ``all``."""
    questions = pd.factorize(pd.Series(list(zip(games["lang"], games["query_id"]))))[0]
    score, low, high = clustered_mean_interval(games["winner"].map(SCORE).to_numpy(), questions, strata)
    low, high = max(low, 0.0), min(high, 1.0)  # a share: the t interval clipped to [0, 1]
    row = {"lang": lang, "questions": games[["lang", "query_id"]].drop_duplicates().shape[0], "games": len(games),
           "student_wins": int((games["winner"] == "student").sum()),
           "control_wins": int((games["winner"] == "control").sum()), "ties": int((games["winner"] == "tie").sum()),
           "score": score, "score_ci_low": low, "score_ci_high": high}
    if with_criteria:
        question = pd.factorize(pd.Series(list(zip(differences["lang"], differences["query_id"]))))[0]
        question_strata = pd.factorize(differences["lang"])[0] if lang == "all" else None
        row["questions_both_parsed"] = len(differences)
        for criterion in CRITERIA:
            mean, low, high = clustered_mean_interval(differences[criterion].to_numpy(), question, question_strata)
            row.update({f"{criterion}_gain": mean, f"{criterion}_ci_low": low, f"{criterion}_ci_high": high})
    return row


def gain_over_control(games_by_lang: dict[str, pd.DataFrame], student: str, control: str,
                      reference_judge: bool) -> pd.DataFrame:
    """One row per language and ``all``: the student's games against its control and, for the
    reference judge, its criteria broken out (module docstring)."""
    pairs = {lang: pair_games(games, student, control).assign(lang=lang) for lang, games in games_by_lang.items()}
    empty = [lang for lang, games in pairs.items() if games.empty]
    if empty:
        raise DataError(f"no valid game between {student!r} and its control {control!r} in {empty}")
    differences = {lang: criteria_differences(games, student, control).assign(lang=lang)
                   for lang, games in pairs.items()} if reference_judge else {}
    rows = [gain_rows(games, lang, None, reference_judge, differences.get(lang)) for lang, games in pairs.items()]
    every = pd.concat(pairs.values(), ignore_index=True)
    rows.append(gain_rows(every, "all", pd.factorize(every["lang"])[0], reference_judge,
                          pd.concat(differences.values(), ignore_index=True) if reference_judge else None))
    return pd.DataFrame(rows)
