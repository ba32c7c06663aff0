"""Snakemake entry point of rule judge_agreement: results/arena/{lang}/judge_agreement.csv (Cohen's
kappa of every pair of judges on the games both judged) and self_preference.csv (a judge's logit
of a contestant of its own family against the other families' judges; panels take no part)."""

import logging

import pandas as pd

from polyrag.arena.diagnostics import agreement_table, self_preference
from polyrag.arena.games import read_games
from polyrag.logs import run_logged
from polyrag.seeds import rng_for

SELF_PREFERENCE_COLUMNS = ["lang", "judge", "model", "family", "self_preference", "ci_low", "ci_high", "logit",
                           "logit_other_judges", "other_judges", "models_compared", "questions_compared",
                           "discriminates", "position_consistency", "position_consistency_ci_low",
                           "position_consistency_chance", "note"]


def main() -> None:
    sm = snakemake  # noqa: F821 - provided by Snakemake
    p, lang = sm.params, sm.wildcards.lang
    games = {judge: read_games(paths) for judge, paths in p.games.items()}
    agreement = agreement_table(games, p.bootstrap, rng_for(p.seed, "judge_agreement", lang))
    # A panel's verdicts are its members' votes: its kappa with a member is inflated by construction.
    agreement["member_of_panel"] = [other in p.panels.get(judge, []) or judge in p.panels.get(other, [])
                                    for judge, other in zip(agreement["judge"], agreement["other_judge"])]
    agreement.insert(0, "lang", lang)
    agreement.to_csv(sm.output.agreement, index=False)
    judges = {judge: judge_games for judge, judge_games in games.items() if judge not in p.panels}
    own_family = {family for judge, family in p.judge_family.items() if judge in judges} & set(p.model_family.values())
    preference = pd.DataFrame(columns=SELF_PREFERENCE_COLUMNS)
    if own_family:
        preference = self_preference(judges, p.models, p.model_family, p.judge_family, p.regularization, p.bootstrap,
                                     rng_for(p.seed, "self_preference", lang))
        preference.insert(0, "lang", lang)
    else:
        logging.getLogger("polyrag").info("no judge shares a family with a contestant: no self-preference to measure")
    preference.to_csv(sm.output.self_preference, index=False)


run_logged(main, snakemake.log[0])  # noqa: F821
