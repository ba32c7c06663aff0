"""The one place that decides what a judge is: its ``backend`` names a kind, and the kind says how
the workflow schedules it, whether it sends prompts, and which class judges its pairs (the
lm-evaluation-harness style: a name maps to one implementation; an unknown name fails listing the
known ones).

- ``per_pair``: one job per model pair (or per round under a budget), judging on the submitting
  node: the ``reference`` and ``recorded`` judges and an API judge (``openai``).
- ``local_weights``: one job judges every pair, loading the model once (vLLM, transformers,
  llama.cpp; a GPU job on a cluster).
- ``panel``: votes over its members' verdicts (``arena/panel.py``); it judges nothing itself.

``reads_answer_languages``: the judge scores the language of each answer, which it reads from the
answers' deterministic features (``target_language``) rather than detecting it again per pair.

``sends_prompts``: the judge is a language model, so it can also score features
(``features.llm``) and sentences (``meta_eval.llm_judges``), and its calls cost something.

A language model's kind (its scheduling) and its jobs' default resources come from the table of LLM
backends (``polyrag.llm.backends``); the kinds that are no language model give their own here.
"""

from __future__ import annotations

from dataclasses import dataclass

from polyrag.errors import ConfigError
from polyrag.features.embedding import e5_store
from polyrag.judge.play import judge_pairs_with_llm, judge_with_reference
from polyrag.judge.recorded import recorded_games
from polyrag.llm import open_llm
from polyrag.llm.backends import LLM_BACKENDS


class PairJudge:
    """Judges the pairs of one language: ``judge(lang, matchups)`` takes ``(model_a, model_b,
    items)`` (items from ``judge.play.arena_items``) and returns each matchup's game rows."""

    def __init__(self, name: str, entry: dict, cache_dir: str, judging: dict, threads: int | None = None):
        self.name, self.entry, self.cache_dir, self.judging = name, entry, cache_dir, judging
        self.threads = threads  # the job's granted CPU threads, for a judge on local weights

    def judge(self, lang: str, matchups: list[tuple[str, str, list]]) -> list[list[dict]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ReferencePairJudge(PairJudge):
    """Scores each answer against the reference answer (``judge/reference.py``); no LLM."""

    def __init__(self, name, entry, cache_dir, judging, threads=None):
        super().__init__(name, entry, cache_dir, judging, threads)
        self.embed = e5_store(cache_dir)

    def judge(self, lang, matchups):
        return [judge_with_reference(items, a, b, self.entry, self.embed) for a, b, items in matchups]


class RecordedPairJudge(PairJudge):
    """Reads verdicts recorded elsewhere (``judge/recorded.py``)."""

    def judge(self, lang, matchups):
        return [recorded_games([record for record, _, _ in items], a, b, lang, self.entry, self.cache_dir)
                for a, b, items in matchups]


class LLMPairJudge(PairJudge):
    """A language model asked MIRAGE-BENCH's pairwise prompt; one batch per language."""

    def __init__(self, name, entry, cache_dir, judging, threads=None):
        super().__init__(name, entry, cache_dir, judging, threads)
        self.llm = open_llm(name, entry, cache_dir=cache_dir, seed=judging["seed"], threads=threads)

    def judge(self, lang, matchups):
        return judge_pairs_with_llm(self.llm, matchups, self.judging)

    def close(self):
        self.llm.close()


@dataclass(frozen=True)
class JudgeKind:
    backend: str
    scheduling: str  # per_pair | local_weights | panel
    sends_prompts: bool
    pair_judge: type[PairJudge] | None  # None: a panel, which votes instead
    resources: dict[str, int] | None  # default cluster resources of its jobs (None: a panel has none)
    reads_answer_languages: bool = False


KINDS = {kind.backend: kind for kind in (
    JudgeKind("reference", "per_pair", False, ReferencePairJudge,
              {"gpu": 0, "mem_mb": 4000, "runtime": 60, "threads": 1}, reads_answer_languages=True),
    JudgeKind("recorded", "per_pair", False, RecordedPairJudge, {"gpu": 0, "mem_mb": 4000, "runtime": 30, "threads": 1}),
    *(JudgeKind(llm.name, "local_weights" if llm.local_weights else "per_pair", True, LLMPairJudge, llm.resources)
      for llm in LLM_BACKENDS.values() if llm.judges),
    JudgeKind("panel", "panel", False, None, None),
)}


def judge_kind(entry: dict, name: str = "judge") -> JudgeKind:
    try:
        return KINDS[entry["backend"]]
    except KeyError:
        raise ConfigError(f"judges.{name}.backend: unknown judge kind {entry.get('backend')!r} "
                          f"(known: {', '.join(KINDS)})") from None


def judges_scheduled(config: dict, scheduling: str) -> list[str]:
    """The configured judges of one scheduling, in config order."""
    return [name for name, entry in config["judges"].items() if judge_kind(entry, name).scheduling == scheduling]


def prompting_judges(config: dict) -> list[str]:
    """The configured judges that are language models, in config order."""
    return [name for name, entry in config["judges"].items() if judge_kind(entry, name).sends_prompts]


def open_pair_judge(name: str, entry: dict, cache_dir: str, judging: dict, threads: int | None = None) -> PairJudge:
    """The judge behind a configured name, ready to judge pairs (a panel does not judge pairs);
    ``threads``: the job's granted CPU threads."""
    kind = judge_kind(entry, name)
    if kind.pair_judge is None:
        raise ValueError(f"judge {name!r} is a panel: it votes over its members' games")
    return kind.pair_judge(name, entry, cache_dir, judging, threads)
