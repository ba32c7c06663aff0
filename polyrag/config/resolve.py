"""What validation adds to a config after the schema check: local data paths filled from
environment variables and resolved against the workflow's folder, and the fine-tuned student
(with its control) joined to ``models:``. ``polyrag.config.validate.validate_config`` calls both.
"""

from __future__ import annotations

import os
from pathlib import Path

from polyrag.config.queries import control_entry, control_name, finetune_adapter_dir
from polyrag.finetune.student import student_entry
from polyrag.systems.answer_files import language_path, reads_answer_files

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
        if reads_answer_files(entry):
            for key in ("answers", "corpus"):
                if entry[key]:
                    entry[key] = local_pattern(entry[key], config["languages"], workflow_dir)


def add_student(config: dict) -> None:
    """The fine-tuned student joins ``models:`` under ``finetune.name``, served with its adapter,
    and its control (``control_name``) served the same way without it."""
    finetune = config["finetune"]
    config["models"][finetune["name"]] = student_entry(finetune["student"], finetune_adapter_dir(config),
                                                       finetune["lora"]["r"])
    if finetune["control"]:
        config["models"][control_name(config)] = control_entry(config)
