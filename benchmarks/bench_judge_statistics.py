"""Coverage of the judge statistics' 95% intervals, measured on simulated arenas with known truth.

For each statistic, ``--simulations`` arenas are drawn from a known model (seeded), the interval
is computed as the workflow computes it, and the table prints how often it contains the true
value, beside the nominal 0.95, with the mean estimate against the truth:

- position consistency and first-position win rate (Wilson intervals clustered by question): 4
  models, every pair in both orders, a judge adding ``FIRST_BIAS`` to the logit of the answer
  shown first, the same for every question or varying by question (clustered games);
- Cohen's kappa (bootstrap over questions): two judges reporting a latent verdict with
  reliabilities 0.8 and 0.5, else a uniform label (population kappa in closed form);
- self-preference (joint bootstrap over questions): three judges, one adding ``DELTA`` to the
  logit of its own family's model; truth ``DELTA (1 - 1/M)`` after centring over M models;
- style-controlled logits and the length coefficient (bootstrap over questions): a judge adding
  ``LENGTH_BIAS x (la - lb) / (la + lb + 1)``, weaker models writing longer answers.

The simulators are the tests' (tests/helpers/arena.py, tests/arena/test_diagnostics.py,
tests/arena/test_style_control.py).

    .venv/bin/python benchmarks/bench_judge_statistics.py [--simulations 100] [--questions 100]
        [--bootstrap 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from polyrag.arena.diagnostics import judge_agreement, judge_diagnostics, self_preference  # noqa: E402
from polyrag.arena.style_control import style_controlled_bt  # noqa: E402
from tests.arena.test_diagnostics import SPREAD, first_position_truth, noisy_judges, population_kappa  # noqa: E402
from tests.arena.test_style_control import LONGER_WHEN_WORSE, TRUE_ORDER, styled_arena  # noqa: E402
from tests.helpers.arena import STRENGTHS, sigmoid, simulate_games  # noqa: E402

FIRST_BIAS, DELTA, LENGTH_BIAS, ALPHA = 0.8, 0.5, 4.0, 0.01


def row(statistic, covered, estimates, truth, seconds, source="polyrag", **size) -> dict:
    covered = np.asarray(covered, bool)
    return {"statistic": statistic, "source": source, **size, "intervals": covered.size, "coverage": covered.mean(),
            "nominal": 0.95, "mean_estimate": np.mean(estimates), "truth": np.mean(truth), "seconds": seconds}


def position(simulations: int, questions: int, question_sd: float = 0.0) -> list[dict]:
    """``question_sd`` > 0: each question shifts the judge's position bias by its own normal
    deviation, so the games of one question are correlated (the clustered setting); the
    independent-games Wilson interval the diagnostics used before is measured beside it."""
    models = sorted(STRENGTHS)
    differences = [STRENGTHS[a] - STRENGTHS[b] for i, a in enumerate(models) for b in models[i + 1:]]
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    bias = FIRST_BIAS + question_sd * nodes  # the question's bias at each quadrature node
    weights = weights / weights.sum()
    consistency_truth = np.mean([weights @ (sigmoid(d + bias) * sigmoid(d - bias)
                                            + (1 - sigmoid(d + bias)) * (1 - sigmoid(d - bias))) for d in differences])
    first_truth = first_position_truth(FIRST_BIAS, question_sd, differences)
    start, results, independent = time.perf_counter(), [], []
    for simulation in range(simulations):
        games = simulate_games(STRENGTHS, questions, np.random.default_rng(simulation), first_position_bias=FIRST_BIAS,
                               question_bias_sd=question_sd)
        result = judge_diagnostics(games)
        results.append(result)
        independent.append(binomtest(result["first_position_wins"], result["decisive_games"]).proportion_ci(
            0.95, method="wilson"))
    seconds = time.perf_counter() - start
    table = pd.DataFrame(results)
    setting = {"questions": questions, "tournaments": 0, "question_bias_sd": question_sd}
    rows = [row("position_consistency (clustered Wilson)", (table["position_consistency_ci_low"] <= consistency_truth)
                & (consistency_truth <= table["position_consistency_ci_high"]), table["position_consistency"],
                [consistency_truth], seconds, **setting),
            row("first_position_win_rate (clustered Wilson)", (table["first_position_ci_low"] <= first_truth)
                & (first_truth <= table["first_position_ci_high"]), table["first_position_win_rate"],
                [first_truth], seconds, **setting)]
    if question_sd:
        covered = [low <= first_truth <= high for low, high in independent]
        rows.append(row("first_position_win_rate (Wilson over games)", covered, table["first_position_win_rate"],
                        [first_truth], seconds, source="games as independent trials", **setting))
    return rows


def kappa(simulations: int, questions: int, tournaments: int) -> dict:
    truth, covered, estimates = population_kappa(), [], []
    start = time.perf_counter()
    for simulation in range(simulations):
        rng = np.random.default_rng(10_000 + simulation)
        result = judge_agreement(*noisy_judges(questions, rng), tournaments, rng)
        covered.append(result["kappa_ci_low"] <= truth <= result["kappa_ci_high"])
        estimates.append(result["kappa"])
    return row("kappa (bootstrap)", covered, estimates, [truth], time.perf_counter() - start,
               questions=questions, tournaments=tournaments)


def preference(simulations: int, questions: int, tournaments: int) -> dict:
    models = sorted(SPREAD)  # judges that discriminate: self-preference is computed only for them
    truth = DELTA * (1 - 1 / len(models))
    favoured = {**SPREAD, "m2": SPREAD["m2"] + DELTA}
    covered, estimates = [], []
    start = time.perf_counter()
    for simulation in range(simulations):
        rng = np.random.default_rng(20_000 + simulation)
        games = {"own": simulate_games(favoured, questions, rng), "other-1": simulate_games(SPREAD, questions, rng),
                 "other-2": simulate_games(SPREAD, questions, rng)}
        table = self_preference(games, models, {"m2": "f"}, {"own": "f", "other-1": "g", "other-2": "h"}, ALPHA,
                                tournaments, rng)
        result = table.iloc[0]
        covered.append(result["ci_low"] <= truth <= result["ci_high"])
        estimates.append(result["self_preference"])
    return row("self_preference (joint bootstrap)", covered, estimates, [truth], time.perf_counter() - start,
               questions=questions, tournaments=tournaments)


def style(simulations: int, questions: int, tournaments: int) -> list[dict]:
    models = sorted(TRUE_ORDER)
    truth = pd.Series(TRUE_ORDER)[models]
    logits_covered, logits, length_covered, lengths = [], [], [], []
    start = time.perf_counter()
    for simulation in range(simulations):
        rng = np.random.default_rng(30_000 + simulation)
        games, answer_style = styled_arena(TRUE_ORDER, LONGER_WHEN_WORSE, questions, rng, LENGTH_BIAS)
        table, coefficients, _ = style_controlled_bt(games, answer_style, models, ALPHA, tournaments, rng)
        table = table.set_index("model").loc[models]
        logits_covered += list((table["ci_low"] <= truth) & (truth <= table["ci_high"]))
        logits += list(table["logit"] - truth)
        length = coefficients.set_index("covariate").loc["length_tokens"]
        length_covered.append(length["ci_low"] / length["scale"] <= LENGTH_BIAS <= length["ci_high"] / length["scale"])
        lengths.append(length["coefficient"] / length["scale"])
    seconds = time.perf_counter() - start
    return [row("style-controlled logit (bootstrap; estimate - truth)", logits_covered, logits, [0.0], seconds,
                questions=questions, tournaments=tournaments),
            row("length coefficient per ratio unit (bootstrap)", length_covered, lengths, [LENGTH_BIAS], seconds,
                questions=questions, tournaments=tournaments)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulations", type=int, default=100)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    rows = [*position(10 * args.simulations, args.questions), *position(10 * args.simulations, 30, 1.5),
            kappa(5 * args.simulations, 40, args.bootstrap), kappa(2 * args.simulations, args.questions, args.bootstrap),
            preference(args.simulations, args.questions, args.bootstrap),
            *style(args.simulations, args.questions, args.bootstrap)]
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
