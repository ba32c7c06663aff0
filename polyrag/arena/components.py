"""Retriever or generator? An additive Bradley-Terry model of RAG systems that cross their parts.

When the arena's systems cross passage sources with generators (two generators each given the
passages of two retrieval runs, or each with its closed-book and oracle baselines), the judge's
verdicts are fitted with a Bradley-Terry model whose strength is a sum of a passages effect and a
generator effect:

    strength(system) = passages_effect[passages(system)] + generator_effect[generator(system)]
    P(a beats b)     = 1 / (1 + exp(strength_b - strength_a))

A system's *passages* (its passage source, ``polyrag.config.queries.passage_sources``) is its
retrieval run and depth (``bm25@5``, ``e5+bge@3``), a baseline's mode (``closed_book``,
``oracle``), ``question`` (the question's own passages) or ``file:...`` (a passage file); its
generator is the model that answers. Games are the arena's (``polyrag.arena.games``): a tie is
half a win each, ``invalid`` verdicts are no games. The fit is the arena's estimator on this
design: the log-likelihood minus ``regularization`` times the sum of the squared effects (every
effect of both factors), scikit-learn's L2 logistic regression without intercept on the rows of
design differences (``C = 1 / (2 regularization)``). The penalty centres each factor: adding a
constant to every passages effect changes no probability, so the penalised maximum has the
effects of each factor summing to zero (they are identified as contrasts).

Identification. The systems' (passages, generator) pairs are the edges of a bipartite graph of
levels; the two factors are separated only within a connected component of it (a generator seen
with one set of passage sources and another generator with a disjoint set cannot be compared apart
from their passages). A design of more than one component stops with one ``DataError`` naming the
systems of each; the workflow fits the component that crosses (``crossed_systems``) and names the
systems it leaves out.

Intervals, as the arena's (``bradley_terry``): bootstrap tournaments resample whole questions (all
games of a question share its answers), within each stratum (language) when the games pool
several; an effect's interval is ``effect +- t(q-1) sqrt(q/(q-1)) sd`` over the tournaments, q the
questions on which a system of that level has a valid game.

Which factor moves the ranking. A factor's *spread* is the range of its effects (best level minus
worst, in logits): how far swapping the worst passages (or generator) for the best moves a system.
A plug-in range is biased upward (the range of noisy equal effects is positive), most where the
effects are close: the t interval of the bootstrap ranges held 0.84 of the time for a factor of 3
levels without effect. The interval reported holds whatever the effects, 0 included: the range is
the largest |difference| of two levels, and every such difference gets the arena's interval at a
Bonferroni level over the factor's pairs (``spread_with_interval``; exact with two levels,
conservative with more). The spread reported is bias-corrected by the bootstrap (twice the plug-in
minus the mean over the tournaments, at least 0), the plug-in beside it. The verdict compares the
two spreads by the interval of their difference (generator minus passages) and says which factor
moves the ranking more only when that interval excludes 0, else that the data cannot tell. The
difference's interval starts as the t interval of the tournaments' ranges' difference around the
bias-corrected difference; it fails where a factor's best or worst level is close to another (a
range over near-equal effects keeps an upward bias the correction does not remove: six generators
without effect beside passages of spread 0.64 gave an interval holding the truth 0.75 of the time,
one generator 0.5 above five equal ones 0.91, every miss on the side the bias pushes). So each end
that a factor's bias threatens is widened to the projection of the two spreads' simultaneous
intervals (each at 1 - alpha/2: ``[low_generator - high_passages, high_generator -
low_passages]``, which holds whenever both do): the lower end when the generator's best or worst
level is not surely apart from every other (``extremes_separated``, the spread's Bonferroni pairs at
1 - alpha/2), the upper end when the passages' is not (``spread_difference_widened_for`` names
them). The end away from the bias keeps the t interval, so a difference between factors whose
levels stand apart keeps its power. ``benchmarks/bench_coverage.py --only component`` measures
every interval and the test.

Interaction. The additive model is tested against the full model (one strength per system): the
interaction is the part of the systems' strengths outside the additive space, ``C theta`` with C an
orthonormal basis of the complement (df = (systems - 1) - (passages - 1) - (generators - 1)). Games
of one question are correlated, so a likelihood ratio against chi-square(df) rejects too often
(measured in the benchmark); the test is a cluster-robust Wald test: the covariance of the full
fit's strengths from the question-clustered sandwich (scores summed per question, times q/(q-1)),
and Hotelling's small-sample F(df, q - df) for a covariance estimated from q clusters. With df = 0
(the bipartite graph of the design has no cycle, e.g. 2 x 2 with a cell missing: each system is the
only link between its passages and its generator) the additive model fits every system exactly and
no test is possible; two systems in one cell make a cycle (the test then also asks whether they
are equal). Nor is one possible with no more questions (with a valid game) than df: Hotelling's
F(df, q - df) needs q > df.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import fdtrc

from polyrag.arena.bradley_terry import fit_logits
from polyrag.arena.games import question_win_matrices, tally
from polyrag.config.queries import component_cells, judge_contestants
from polyrag.errors import DataError
from polyrag.stats.bootstrap import MIN_BOOTSTRAP_QUESTIONS, bootstrap_interval, critical_value, tournament_counts

#: The two factors, in the order of the table and of the design's columns.
PASSAGES, GENERATOR = "passages", "generator"
FACTORS = (PASSAGES, GENERATOR)
TABLE_COLUMNS = ["factor", "level", "effect", "ci_low", "ci_high", "n_systems", "questions", "systems"]
NO_TEST = ("no test possible: the systems' (passages, generator) pairs form no cycle (each system is the only link "
           "between its passages and its generator), so the additive model fits every system exactly")


def too_few_questions(questions: int, df: int) -> str:
    """The interaction test's other empty case: Hotelling's F(df, q - df) needs more questions than contrasts."""
    return (f"no test possible: {questions} questions with a valid game for {df} interaction contrasts (the "
            "question-clustered test needs more questions than contrasts)")


# --- the design ------------------------------------------------------------------------------

def connected_components(cells: dict[str, tuple[str, str]]) -> list[list[str]]:
    """The systems of each connected component of the bipartite graph whose nodes are the passage
    sources and generators and whose edges are the systems (``cells``: system -> (passages,
    generator)), largest first, each sorted."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node):
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for passages, generator in cells.values():
        parent[root((PASSAGES, passages))] = root((GENERATOR, generator))
    groups: dict[tuple[str, str], list[str]] = {}
    for system, (passages, _) in sorted(cells.items()):
        groups.setdefault(root((PASSAGES, passages)), []).append(system)
    return sorted(groups.values(), key=lambda systems: (-len(systems), systems))


def crosses(cells: dict[str, tuple[str, str]]) -> bool:
    """Whether the systems cross their parts: at least two generators each given at least two
    passage sources, two of which share a passage source (so a passages effect is seen under
    more than one generator)."""
    sources: dict[str, set[str]] = {}
    for passages, generator in cells.values():
        sources.setdefault(generator, set()).add(passages)
    several = [seen for seen in sources.values() if len(seen) >= 2]
    return any(a & b for i, a in enumerate(several) for b in several[i + 1:])


def crossed_component(cells: dict[str, tuple[str, str]]) -> list[str]:
    """The systems of the largest connected component that crosses (``crosses``), or none."""
    for systems in connected_components(cells):
        if crosses({system: cells[system] for system in systems}):
            return systems
    return []


def check_identified(cells: dict[str, tuple[str, str]]) -> None:
    """One ``DataError`` naming the systems of each connected component when there are several:
    the passages and generator effects are then not identified apart."""
    components = connected_components(cells)
    if len(components) > 1:
        listed = "; ".join(f"component {k + 1}: {', '.join(systems)}" for k, systems in enumerate(components))
        raise DataError(f"the systems' (passages, generator) pairs fall in {len(components)} unconnected groups, so "
                        f"passages and generator effects cannot be told apart across them ({listed}); fit the "
                        "systems of one group (a generator must share a passage source with another)")


@dataclass(frozen=True)
class Design:
    """The additive design of ``systems``: ``matrix[s]`` has a 1 in the column of its passages
    level and in the column of its generator level (``levels``: passages levels, then generators)."""

    systems: list[str]
    passages: list[str]
    generators: list[str]
    matrix: np.ndarray

    @classmethod
    def of(cls, cells: dict[str, tuple[str, str]]) -> Design:
        systems = sorted(cells)
        passages = sorted({cells[s][0] for s in systems})
        generators = sorted({cells[s][1] for s in systems})
        matrix = np.zeros((len(systems), len(passages) + len(generators)))
        for i, system in enumerate(systems):
            matrix[i, passages.index(cells[system][0])] = 1.0
            matrix[i, len(passages) + generators.index(cells[system][1])] = 1.0
        return cls(systems, passages, generators, matrix)

    @property
    def levels(self) -> list[tuple[str, str]]:
        return [(PASSAGES, level) for level in self.passages] + [(GENERATOR, level) for level in self.generators]

    @property
    def interaction_df(self) -> int:
        """(systems - 1) - (passages - 1) - (generators - 1) for a connected design."""
        return len(self.systems) - 1 - (len(self.passages) - 1) - (len(self.generators) - 1)

    def interaction_basis(self) -> np.ndarray:
        """Orthonormal rows spanning the systems' strengths outside the additive space (the
        complement of the design's columns, which hold the constant): ``interaction_df`` rows."""
        u, singular, _ = np.linalg.svd(self.matrix, full_matrices=True)
        rank = int((singular > 1e-9 * singular.max()).sum())
        return u[:, rank:].T


# --- the fit ---------------------------------------------------------------------------------

def fit_additive(wins: np.ndarray, design: np.ndarray, regularization: float) -> np.ndarray:
    """The effects (one per design column, each factor's centred) maximising the BT
    log-likelihood of the win matrix ``wins`` (systems x systems, fractional for ties) with
    strengths ``design @ effects``, minus ``regularization * sum(effects**2)``: scikit-learn's L2
    logistic regression without intercept on the pairs' design differences."""
    from sklearn.linear_model import LogisticRegression  # imported here: Snakemake imports this module to plan

    first, second = np.triu_indices(len(design), k=1)
    won, lost = wins[first, second], wins[second, first]
    played = won + lost > 0
    rows = design[first[played]] - design[second[played]]
    regression = LogisticRegression(C=1 / (2 * regularization), fit_intercept=False, solver="newton-cholesky",
                                    tol=1e-10, max_iter=1000)
    regression.fit(np.vstack([rows, rows]), np.r_[np.ones(len(rows)), np.zeros(len(rows))],
                   sample_weight=np.r_[won[played], lost[played]])
    return regression.coef_[0]


def centre_by_factor(effects: np.ndarray, n_passages: int) -> np.ndarray:
    """Each factor's effects minus their mean (the penalised fit's are already, to solver precision)."""
    effects = np.array(effects, dtype=float)
    for part in (np.s_[..., :n_passages], np.s_[..., n_passages:]):
        effects[part] -= effects[part].mean(axis=-1, keepdims=True)
    return effects


def stratified_counts(strata: np.ndarray, n_tournaments: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap tournaments (tournaments x questions: how often each is drawn) resampling the
    questions of each stratum within it; one stratum is ``tournament_counts`` (the arena's draws)."""
    strata = np.asarray(strata)
    labels = list(dict.fromkeys(strata))
    if len(labels) == 1:
        return tournament_counts(len(strata), n_tournaments, rng)
    counts = np.zeros((n_tournaments, len(strata)), dtype=int)
    for label in labels:
        members = np.flatnonzero(strata == label)
        counts[:, members] = tournament_counts(len(members), n_tournaments, rng)
    return counts


def level_question_counts(question_wins: np.ndarray, design: np.ndarray) -> np.ndarray:
    """Per design column, the questions on which a system of that level has a valid game."""
    played = (question_wins + question_wins.transpose(0, 2, 1)).sum(axis=2) > 0  # questions x systems
    return (played.astype(int) @ design > 0).sum(axis=0)


# --- spreads ---------------------------------------------------------------------------------

def spread(effects: np.ndarray) -> np.ndarray:
    """The range of effects (best minus worst) along the last axis."""
    return effects.max(axis=-1) - effects.min(axis=-1)


def pairwise_half_widths(samples: np.ndarray, level_questions: np.ndarray,
                         confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of levels (``first``, ``second``: upper-triangle indices) and the half-width of
    their difference's interval: the arena's t-corrected interval at the fewer of the two levels'
    questions, at a Bonferroni level over the factor's pairs."""
    first, second = np.triu_indices(samples.shape[1], k=1)
    if not len(first):
        return first, second, np.zeros(0)
    half = (critical_value(np.minimum(level_questions[first], level_questions[second]),
                           (1 - confidence) / (2 * len(first)))
            * (samples[:, first] - samples[:, second]).std(axis=0, ddof=1))
    return first, second, half


def spread_with_interval(point: np.ndarray, samples: np.ndarray, level_questions: np.ndarray,
                         confidence: float) -> tuple[float, float, float, float]:
    """``(plug-in, bias-corrected, ci_low, ci_high)`` of a factor's spread from its effects
    (``point``), their bootstrap samples (tournaments x levels) and each level's questions.

    The interval holds the range whatever the effects, zero included: the range is the largest
    |e_i - e_j|, and each difference of two levels gets the arena's t-corrected interval (at the
    fewer of the two levels' questions) at a Bonferroni level over the factor's pairs, so that all
    hold at once; the range then lies between the largest lower bound of an |e_i - e_j| (0 where
    its interval holds 0) and the largest upper bound. With two levels this is the t interval of
    their difference, folded at 0; with more it is conservative. The bias-corrected spread is
    twice the plug-in minus the mean over the tournaments, at least 0, kept inside the interval."""
    plug_in = float(spread(point))
    first, second, half = pairwise_half_widths(samples, level_questions, confidence)
    if not len(first):  # one level: nothing to spread
        return 0.0, 0.0, 0.0, 0.0
    difference = point[first] - point[second]
    holds_zero = np.abs(difference) <= half
    low = float(np.where(holds_zero, 0.0, np.abs(difference) - half).max())
    high = float((np.abs(difference) + half).max())
    corrected = min(max(2 * plug_in - float(spread(samples).mean()), low, 0.0), high)
    return plug_in, corrected, low, high


def extremes_separated(point: np.ndarray, samples: np.ndarray, level_questions: np.ndarray,
                       confidence: float) -> bool:
    """Whether the best level is surely above every other and the worst surely below every other
    (each pair's difference by the Bonferroni interval of ``spread_with_interval`` at ``confidence``).
    Only then is the range a smooth function of the effects near them, and the t interval of the
    tournaments' ranges trustworthy: a level close to the best or the worst (levels without effect
    above all) leaves the range biased upward."""
    first, second, half = pairwise_half_widths(samples, level_questions, confidence)
    if not len(first):
        return True
    apart = np.abs(point[first] - point[second]) > half
    best, worst = int(np.argmax(point)), int(np.argmin(point))
    touches_an_extreme = np.isin(first, [best, worst]) | np.isin(second, [best, worst])
    return bool(apart[touches_an_extreme].all())


# --- the interaction test --------------------------------------------------------------------

def clustered_covariance(logits: np.ndarray, question_wins: np.ndarray, regularization: float) -> np.ndarray:
    """The question-clustered sandwich covariance of the full BT fit's logits at ``logits``:
    H^-1 (q/(q-1) sum_q U_q U_q') H^-1, U_q the score of question q's games, H the penalised
    information (its own games' and the penalty's curvature)."""
    games = question_wins + question_wins.transpose(0, 2, 1)
    p = 1 / (1 + np.exp(logits[None, :] - logits[:, None]))  # p[i, j] = P(i beats j)
    scores = (question_wins - games * p[None]).sum(axis=2)  # questions x systems
    scores = scores[games.sum(axis=(1, 2)) > 0]
    q = len(scores)
    curvature = games.sum(axis=0) * p * (1 - p)
    information = np.diag(curvature.sum(axis=1) + 2 * regularization) - curvature
    inverse = np.linalg.inv(information)
    meat = scores.T @ scores * q / max(q - 1, 1)
    return inverse @ meat @ inverse


def interaction_test(question_wins: np.ndarray, design: Design, regularization: float) -> dict:
    """The cluster-robust Wald test of the additive model against one strength per system:
    ``statistic`` (Hotelling's F), ``df``, ``df_denominator``, ``p_value``, ``method``, ``note``."""
    df = design.interaction_df
    base = {"interaction_df": df, "interaction_method": "cluster-robust Wald (question sandwich), Hotelling F"}
    if df == 0:
        return base | {"interaction_statistic": None, "interaction_df_denominator": None,
                       "interaction_p_value": None, "interaction_note": NO_TEST}
    q = int(((question_wins + question_wins.transpose(0, 2, 1)).sum(axis=(1, 2)) > 0).sum())
    if q <= df:
        return base | {"interaction_statistic": None, "interaction_df_denominator": None,
                       "interaction_p_value": None, "interaction_note": too_few_questions(q, df)}
    logits = fit_logits(question_wins.sum(axis=0), regularization)
    basis = design.interaction_basis()
    contrast = basis @ logits
    covariance = basis @ clustered_covariance(logits, question_wins, regularization) @ basis.T
    wald = float(contrast @ np.linalg.pinv(covariance) @ contrast)
    statistic = wald * (q - df) / (df * (q - 1))
    p_value = float(fdtrc(df, q - df, statistic))
    note = ("the systems' strengths depart from the sum of a passages and a generator effect (p < 0.05): the "
            "effects are averages over the crossings" if p_value < 0.05 else
            "no evidence against additivity at 0.05 (which does not show the parts add up)")
    return base | {"interaction_statistic": statistic, "interaction_df_denominator": q - df,
                   "interaction_p_value": p_value, "interaction_note": note}


# --- all together ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AdditiveFit:
    """The point fit and bootstrap tournaments of one arena: ``effects`` (one per design column,
    centred per factor), ``samples`` (tournaments x columns), ``wins`` (questions x systems x
    systems), ``level_questions`` (per column, its clusters)."""

    design: Design
    questions: list[str]
    wins: np.ndarray
    effects: np.ndarray
    samples: np.ndarray
    level_questions: np.ndarray

    def factor(self, factor: str) -> slice:
        n_passages = len(self.design.passages)
        return slice(0, n_passages) if factor == PASSAGES else slice(n_passages, None)


def fit_with_bootstrap(games: pd.DataFrame, cells: dict[str, tuple[str, str]], regularization: float,
                       n_bootstrap: int, rng: np.random.Generator, strata: dict[str, str] | None = None) -> AdditiveFit:
    """The additive fit of the games among the systems of ``cells`` and its bootstrap tournaments
    (questions resampled within their ``strata`` when given); see :func:`component_effects`."""
    check_identified(cells)
    design = Design.of(cells)
    games = games[games["model_a"].isin(design.systems) & games["model_b"].isin(design.systems)]
    counts = tally(games, design.systems)
    unplayed = counts.loc[counts["games"] == 0, "model"].tolist()
    if unplayed:
        raise DataError(f"no valid game for {unplayed}: every verdict of their pairs is invalid or missing")
    questions, wins = question_win_matrices(games, design.systems)
    n_passages = len(design.passages)
    effects = centre_by_factor(fit_additive(wins.sum(axis=0), design.matrix, regularization), n_passages)
    stratum = np.array([strata[question] for question in questions]) if strata else np.zeros(len(questions))
    drawn = stratified_counts(stratum, n_bootstrap, rng)
    samples = centre_by_factor(np.array([fit_additive(np.tensordot(row, wins, axes=1), design.matrix, regularization)
                                         for row in drawn]), n_passages)
    return AdditiveFit(design, questions, wins, effects, samples, level_question_counts(wins, design.matrix))


def component_effects(games: pd.DataFrame, cells: dict[str, tuple[str, str]], regularization: float,
                      n_bootstrap: int, rng: np.random.Generator, strata: dict[str, str] | None = None,
                      confidence: float = 0.95) -> tuple[pd.DataFrame, dict]:
    """The additive fit of one judge's games among the systems of ``cells`` (system ->
    (passages, generator)), its intervals, spreads and interaction test.

    ``strata``: question id -> stratum (its language) when the games pool several; bootstrap
    tournaments then resample within each. Games of systems outside ``cells`` are left out.
    Returns ``(table, summary)``: ``table`` has ``TABLE_COLUMNS``, one row per level of each
    factor; ``summary`` the spreads with their intervals, their difference, the interaction test
    and the ``verdict`` line."""
    fit = fit_with_bootstrap(games, cells, regularization, n_bootstrap, rng, strata)
    design = fit.design
    low, high = bootstrap_interval(fit.effects, fit.samples, fit.level_questions, confidence)
    table = pd.DataFrame({
        "factor": [factor for factor, _ in design.levels], "level": [level for _, level in design.levels],
        "effect": fit.effects, "ci_low": low, "ci_high": high,
        "n_systems": design.matrix.sum(axis=0).astype(int), "questions": fit.level_questions,
        "systems": [" ".join(s for s, row in zip(design.systems, design.matrix) if row[k])
                    for k in range(design.matrix.shape[1])]}, columns=TABLE_COLUMNS)
    summary = {"systems": design.systems, "n_questions": len(fit.questions), "n_bootstrap": n_bootstrap,
               "confidence": confidence, "regularization": regularization}
    summary |= spreads(fit, confidence)
    summary |= interaction_test(fit.wins, design, regularization)
    summary["verdict"] = verdict(summary)
    summary["notes"] = coverage_notes(summary, design)
    return table, summary


def spreads(fit: AdditiveFit, confidence: float = 0.95) -> dict:
    """Each factor's spread (plug-in and bias-corrected) with its interval, and the difference of
    the bias-corrected spreads, generator minus passages, with the arena's t-corrected interval over
    the same tournaments (at the fewest questions of a level), each end widened to the two spreads'
    simultaneous bound where the factor whose upward bias threatens it has a best or worst level
    not surely apart from the others (``extremes_separated``); see the module docstring."""
    summary, draws, halves, separated = {}, {}, {}, {}
    for factor in FACTORS:
        part = fit.factor(factor)
        arguments = fit.effects[part], fit.samples[:, part], fit.level_questions[part]
        plug_in, corrected, low, high = spread_with_interval(*arguments, confidence)
        summary |= {f"spread_{factor}": corrected, f"spread_{factor}_ci_low": low, f"spread_{factor}_ci_high": high,
                    f"spread_{factor}_plug_in": plug_in}
        draws[factor] = spread(fit.samples[:, part])
        # each factor's interval at 1 - alpha/2: both hold at once at 1 - alpha (Bonferroni over the two)
        halves[factor] = spread_with_interval(*arguments, 1 - (1 - confidence) / 2)[2:]
        separated[factor] = extremes_separated(*arguments, 1 - (1 - confidence) / 2)
    difference = summary[f"spread_{GENERATOR}"] - summary[f"spread_{PASSAGES}"]
    low, high = (float(end[0]) for end in bootstrap_interval(
        np.array([difference]), (draws[GENERATOR] - draws[PASSAGES])[:, None], int(fit.level_questions.min()),
        confidence))
    (generator_low, generator_high), (passages_low, passages_high) = halves[GENERATOR], halves[PASSAGES]
    widened = []
    if not separated[GENERATOR]:  # the generator's range may be biased upward: it pulls the t interval up
        low, widened = min(low, generator_low - passages_high), widened + [GENERATOR]
    if not separated[PASSAGES]:  # the passages' range may be: it pulls the t interval down
        high, widened = max(high, generator_high - passages_low), widened + [PASSAGES]
    return summary | {"spread_difference": min(max(difference, low), high), "spread_difference_ci_low": low,
                      "spread_difference_ci_high": high, "spread_difference_widened_for": widened}


def coverage_notes(summary: dict, design: Design) -> list[str]:
    """Where the intervals of ``summary`` are not what their level says, as measured by
    ``benchmarks/bench_coverage.py --only component`` (docs/intervals.md): each a sentence."""
    notes = []
    for factor, levels in ((PASSAGES, design.passages), (GENERATOR, design.generators)):
        if len(levels) > 2:
            notes.append(f"the {factor} spread's interval is conservative with {len(levels)} levels (Bonferroni over "
                         f"their {len(levels) * (len(levels) - 1) // 2} pairs; at 3 levels it held a 95% level's truth "
                         "0.965-1.000 of the time, and more levels widen it further)")
    if summary["n_questions"] < MIN_BOOTSTRAP_QUESTIONS:
        notes.append(f"{summary['n_questions']} questions: a question bootstrap's intervals are not reliable below "
                     f"{MIN_BOOTSTRAP_QUESTIONS}")
    notes += [widened_note(factor) for factor in summary.get("spread_difference_widened_for", [])]
    return notes


def widened_note(factor: str) -> str:
    """Why one end of the difference's interval is widened, on the side ``factor``'s bias pushes:
    a generator's range biased upward pulls the difference (generator minus passages) up, so the
    t interval may sit above the truth and its lower end is widened; the passages' pull it down."""
    whose, pull, side, end = (("the generator's", "up", "above", "lower") if factor == GENERATOR else
                              ("the passages'", "down", "below", "upper"))
    return (f"{whose} best or worst level is not surely apart from the others, so its spread is biased upward "
            f"and pulls the difference (generator minus passages) {pull}: a t interval would sit {side} the truth, so "
            f"its {end} end is widened to the two spreads' simultaneous bound (conservative on that side)")


def verdict(summary: dict) -> str:
    """One line: which factor moves the ranking more, only where the difference's interval excludes 0."""
    def interval(key: str) -> str:
        return f"{summary[key]:.2f} [{summary[f'{key}_ci_low']:.2f}, {summary[f'{key}_ci_high']:.2f}]"

    level = f"{summary['confidence']:.0%}"
    figures = (f"spread (best minus worst level, logits) of the generator {interval('spread_generator')}, of the "
               f"passages {interval('spread_passages')}, difference {interval('spread_difference')}")
    if summary["spread_difference_ci_low"] > 0:
        return f"the generator moves the ranking more than the passages ({level}): {figures}"
    if summary["spread_difference_ci_high"] < 0:
        return f"the passages move the ranking more than the generator ({level}): {figures}"
    return f"cannot tell whether the generator or the passages move the ranking more ({level}): {figures}"


#: The columns of components.csv that hold names (a level or a system named ``NA`` or ``080`` stays text).
NAME_COLUMNS = ("factor", "level", "systems")


def read_components(path) -> pd.DataFrame:
    """components.csv as written (names as text)."""
    from polyrag.csv_tables import read_table

    return read_table(path, name_columns=NAME_COLUMNS)


def report_note(summary: dict) -> str:
    """The report's line under "Retriever or generator?": the verdict, the interaction test, the data."""
    test = ""
    if summary["interaction_p_value"] is not None:
        test = (f" (F = {summary['interaction_statistic']:.2f} on {summary['interaction_df']} and "
                f"{summary['interaction_df_denominator']} df, p = {summary['interaction_p_value']:.3f})")
    verdict_line = summary["verdict"][0].upper() + summary["verdict"][1:]
    notes = "".join(f" Note: {note}." for note in summary.get("notes", []))
    return (f"{verdict_line}. Interaction: {summary['interaction_note']}{test}. "
            f"Judge {summary['judge']}, {summary['n_questions']} questions in {', '.join(summary['languages'])}; "
            f"{model_sentence(summary)} (logits, 95% intervals; spreads bias-corrected; docs/arena.md).{notes}")


def model_sentence(summary: dict) -> str:
    """What the effects are: the model itself where the interaction test does not reject it, only its
    additive approximation where it does."""
    p_value = summary["interaction_p_value"]
    if p_value is not None and p_value < 0.05:
        return ("the interaction test rejects additivity, so the effects are only an additive approximation: a "
                "system's strength is not its passages' effect plus its generator's, and each effect is an average "
                "over the crossings")
    return "the model takes a system's strength to be its passages' effect plus its generator's"


def crossed_systems(config: dict, judge: str) -> dict[str, tuple[str, str]]:
    """The cells of the judge's contestants that cross passage sources and generators (the largest
    connected group in which two generators, each given two passage sources or more, share one:
    ``crossed_component``); empty when they do not cross, and the
    component-effects fit is then not requested."""
    cells = component_cells(config, judge_contestants(config, judge))
    return {name: cells[name] for name in crossed_component(cells)}
