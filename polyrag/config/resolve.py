"""What validation adds to a config after the schema check: local data paths filled from
environment variables and resolved against the workflow's folder, the generators' baselines
(closed-book, oracle) and the fine-tuned student (with its control) joined to ``models:``.
``polyrag.config.validate.validate_config`` calls them.
"""

from __future__ import annotations

import os
from pathlib import Path

from polyrag.config.queries import GENERATOR, control_entry, control_name, finetune_adapter_dir
from polyrag.errors import ConfigError
from polyrag.finetune.student import student_entry
from polyrag.systems.answer_files import language_path, passage_file_spec, reads_answer_files
from polyrag.systems.passages import CLOSED_BOOK, DEFAULT_MODE, ORACLE

#: Keys naming local data, and the environment variable read when the key is null.
LOCAL_DATA_KEYS = {
    ("meta_eval", "dir"): "POLYRAG_MEMERAG_DIR",
    ("mars", "gold", "dir"): "POLYRAG_XQUAD_DIR",
    ("mars", "few_shot", "file"): None,
    ("mars", "calibration", "path"): None,
    ("finetune", "training", "dir"): None,
}
DEMO_DIR = "resources/demo"  # data.dir of data.source: demo when null


def local_path(value: str, workflow_dir: Path) -> str:
    """A relative path from the working directory when it exists there, else from the workflow's
    folder: the demo's ``resources/`` ship with the workflow, and ``snakemake --directory`` runs
    elsewhere."""
    if Path(value).is_absolute() or Path(value).exists() or not (workflow_dir / value).exists():
        return value
    return str(workflow_dir / value)


def local_pattern(pattern: str, languages: list[str], workflow_dir: Path) -> str:
    """``local_path`` for a path pattern with ``{lang}`` (a file system's answers and corpus): read
    from the working directory when one of its files exists there, else from the workflow's folder
    when one exists there."""
    files = [Path(language_path(pattern, lang)) for lang in languages]
    if Path(pattern).is_absolute() or any(path.exists() for path in files):
        return pattern
    return str(workflow_dir / pattern) if any((workflow_dir / path).exists() for path in files) else pattern


def resolve_local_data(config: dict, workflow_dir: Path) -> None:
    """Fill null data folders from their environment variable and resolve relative paths in place,
    so that every stage reads the same local files (one way to point the workflow at a copy)."""
    data = config["data"]
    if data["dir"] is None and data["source"] == "xquad":
        data["dir"] = os.environ.get("POLYRAG_XQUAD_DIR")
    if data["dir"] is None and data["source"] == "demo":
        data["dir"] = DEMO_DIR
    if data["dir"]:
        data["dir"] = local_path(data["dir"], workflow_dir)
    for (*parents, key), variable in LOCAL_DATA_KEYS.items():
        section = config
        for parent in parents:
            section = section.get(parent) or {}
        if key not in section:
            continue
        if section[key] is None and variable:
            section[key] = os.environ.get(variable)
        if section[key]:
            section[key] = local_path(section[key], workflow_dir)
    for entry in config["models"].values():
        files = entry if reads_answer_files(entry) else passage_file_spec(entry)
        for key in ("answers", "corpus", "file") if files else ():
            if files.get(key):
                files[key] = local_pattern(files[key], config["languages"], workflow_dir)


def add_student(config: dict) -> None:
    """The fine-tuned student joins ``models:`` under ``finetune.name``, served with its adapter,
    and its control (``control_name``) served the same way without it."""
    finetune = config["finetune"]
    config["models"][finetune["name"]] = student_entry(finetune["student"], finetune_adapter_dir(config),
                                                       finetune["lora"]["r"])
    if finetune["control"]:
        config["models"][control_name(config)] = control_entry(config)


#: The baselines a generator can switch on (``baselines:``), each a passages mode, and its default name.
BASELINE_NAMES = {CLOSED_BOOK: "{generator}-closed-book", ORACLE: "{generator}-oracle"}
def baseline_names(name: str, entry: dict) -> dict[str, str]:
    """The baselines of the generator ``name``: passages mode -> model name (``baselines:`` as a
    list takes the default names, as a mapping the names it gives)."""
    wanted = entry.get("baselines") or []
    if isinstance(wanted, dict):
        return dict(wanted)
    return {mode: BASELINE_NAMES[mode].format(generator=name) for mode in wanted}


def baseline_entry(entry: dict, mode: str | dict, generator: str) -> dict:
    """A baseline's entry: its generator's (backend, decoding, resources, family, judged), given
    other passages (a mode; a retrieved system's passage file, ``config.retrieval.system_entry``)."""
    own = {key: value for key, value in entry.items() if key not in ("baselines", "passages", GENERATOR)}
    return {**own, "passages": mode, GENERATOR: generator}


def add_baselines(config: dict, source: str = "config") -> None:
    """Each generator's baselines join ``models:`` (before the DAG is built: they are answered,
    featured, judged and ranked like any model). Validating a config twice adds nothing twice; a
    name already taken by another model, or two baselines of one name, stop with the keys named."""
    models = config["models"]
    added: dict[str, dict] = {}
    origin: dict[str, str] = {}
    for name, entry in models.items():
        if GENERATOR in entry:
            continue
        for mode, system in baseline_names(name, entry).items():
            where = f"{source}: models.{name}.baselines.{mode}"
            if mode == entry.get("passages", DEFAULT_MODE):
                raise ConfigError(f"{where}: {name!r} is itself given the {mode} passages; drop this baseline")
            if system in origin:
                raise ConfigError(f"{where}: the baseline name {system!r} is also {origin[system]}'s")
            wanted = baseline_entry(entry, mode, name)
            if system in models and models[system] != wanted:  # equal: added by an earlier validation
                raise ConfigError(f"{where}: the baseline {system!r} is already a model under models: "
                                  f"(rename that model, or name the baseline, e.g. baselines: {{{mode}: {name}-{mode}}})")
            added[system], origin[system] = wanted, f"models.{name}.baselines.{mode}"
    systems = config.get("systems") or {}  # their entries name their generator too (config.retrieval.add_systems)
    stray = [name for name, entry in models.items() if GENERATOR in entry and name not in added and name not in systems]
    if stray:
        raise ConfigError(f"{source}: models.{stray[0]}.{GENERATOR}: set only on the models a generator's "
                          "baselines: adds; switch the baseline on there (baselines: [closed_book, oracle])")
    models.update(added)
