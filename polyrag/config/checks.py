"""What each known-truth check (``polyrag.checks``, ``checks:`` in the config) needs from the config.

An entry of ``NEEDS`` says, for the check of the same name in ``polyrag.checks.CHECKS``,

- ``lacks``: what the config must have for the check to mean anything, as one message (None when
  nothing is lacking): checked when the config is validated, so a check never fails for want of
  an ingredient;
- ``settings``: the few config facts it reads (the rule's params: editing anything else reruns
  nothing).

Kept apart from the checks' readers so that the config's validation imports nothing above
``polyrag.config``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polyrag.config.queries import arena_judge, control_name


@dataclass(frozen=True)
class Needs:
    lacks: Callable[[dict, Any], str | None]
    settings: Callable[[dict, Any], dict] = lambda config, expected: {}


def mock_error_rates(config: dict) -> dict[str, float]:
    """The mock systems with an error_rate (a grounded mock's quality comes from its passages)."""
    return {name: entry["error_rate"] for name, entry in config["models"].items()
            if entry["backend"] == "mock" and not entry.get("grounded")}


def mock_order_lacks(config: dict, expected: Any) -> str | None:
    rates = mock_error_rates(config)
    if arena_judge(config) is None:
        return "needs an arena (a judge under judges:) to rank the mock systems"
    # Two mocks of one error rate have no known order between them (tau would fall below 1 on them).
    if len(rates) < 2 or len(set(rates.values())) < len(rates):
        return (f"needs at least two mock systems (backend: mock), each with an error_rate of its own, found "
                f"{rates or 'none'}")
    return None


def grounded_mocks(config: dict) -> list[str]:
    """The grounded mock systems: right exactly when a relevant passage is among those given."""
    return sorted(name for name, entry in config["models"].items() if entry["backend"] == "mock" and entry.get("grounded"))


def passage_order_lacks(config: dict, expected: Any) -> str | None:
    if arena_judge(config) is None:
        return "needs an arena (a judge under judges:) to rank the grounded mock systems"
    if len(grounded_mocks(config)) < 2:
        return (f"needs at least two grounded mock systems (backend: mock, grounded: true) given different passages, "
                f"found {grounded_mocks(config) or 'none'}")
    return None


def mars_coverage_lacks(config: dict, expected: Any) -> str | None:
    if not config["mars"] or not config["mars"]["meta_eval"]:
        return "needs mars: with meta_eval: (the mock systems of known accuracy)"
    return None


def position_bias_lacks(config: dict, expected: list[str]) -> str | None:
    missing = [name for name in expected if name not in config["judges"]]
    if missing:
        return f"{missing} not among the judges under judges: ({sorted(config['judges'])})"
    return None


def finetune_gain_lacks(config: dict, expected: Any) -> str | None:
    if not config["finetune"] or control_name(config) is None:
        return "needs finetune: with its control (finetune.control: true)"
    if arena_judge(config) is None:
        return "needs an arena judge (judges:) to judge the student against its control"
    return None


def finetune_names(config: dict, expected: Any) -> dict:
    return {"student": config["finetune"]["name"], "control": control_name(config)}


def label_anchored_agreement_lacks(config: dict, expected: Any) -> str | None:
    human_labels = config["arena"]["human_labels"]
    if human_labels is None or human_labels["stand_in"] is None:
        return "needs arena.human_labels with a stand_in labeller (the known truth is the stand-in's own ranking)"
    if human_labels["labels"]:
        return (f"arena.human_labels.labels gives people's labels for {sorted(human_labels['labels'])}: the "
                "label-anchored ranking is then no longer the stand-in's to recover")
    return None


def stand_in_labeller(config: dict, expected: Any) -> dict:
    return {"stand_in": config["arena"]["human_labels"]["stand_in"]}




NEEDS: dict[str, Needs] = {
    "mock_order": Needs(lacks=mock_order_lacks,
                        settings=lambda config, expected: {"error_rates": mock_error_rates(config)}),
    "passage_order": Needs(lacks=passage_order_lacks,
                           settings=lambda config, expected: {"grounded": grounded_mocks(config)}),
    "mars_coverage": Needs(lacks=mars_coverage_lacks),
    "position_bias": Needs(lacks=position_bias_lacks),
    "finetune_gain": Needs(lacks=finetune_gain_lacks, settings=finetune_names),
    "label_anchored_agreement": Needs(lacks=label_anchored_agreement_lacks, settings=stand_in_labeller),
}


def turned_on(expectations: dict[str, Any]) -> dict[str, Any]:
    """The checks these expectations turn on (false, null and an empty list turn a check off)."""
    return {name: expected for name, expected in expectations.items()
            if expected is not None and expected is not False and expected != []}


def enabled_checks(config: dict) -> dict[str, Any]:
    """The checks the config turns on, by name, with their expectations."""
    return turned_on(config.get("checks") or {})


def check_settings(config: dict) -> dict[str, dict]:
    return {name: NEEDS[name].settings(config, expected) for name, expected in enabled_checks(config).items()}


def lacking(config: dict) -> tuple[str, str] | None:
    """(check name, what the config lacks for it) of the first enabled check that cannot run."""
    for name, expected in enabled_checks(config).items():
        message = NEEDS[name].lacks(config, expected)
        if message:
            return name, message
    return None
