"""Config validation: JSON schema with defaults, then the checks a schema cannot express.

Every problem stops the run before any job with one message that names the config file and key.
What validation fills in (local data paths, the fine-tuned student) is in ``polyrag.config.resolve``;
what the rules ask of a validated config is in ``polyrag.config.queries``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from jsonschema.exceptions import best_match

from polyrag.config.checks import lacking
from polyrag.config.data_files import check_local_data
from polyrag.config.models import check_named_models
from polyrag.config.outputs import check_results_dir
from polyrag.config.patterns import check_placeholders
from polyrag.config.queries import (SYSTEM, control_entry, control_name, finetune_adapter_dir, finetune_languages,
                                    judge_contestants, judge_pairs, judged_models, mars_gold_pairs, mars_pairs,
                                    wrong_language_source)
from polyrag.config.resolve import add_baselines, add_student, resolve_local_data
from polyrag.config.retrieval import add_systems, check_retrieval
from polyrag.errors import ConfigError
from polyrag.finetune.student import check_student
from polyrag.generate.prompts import refusal
from polyrag.judge.kinds import KINDS, judge_kind
from polyrag.llm.backends import LLM_BACKENDS
from polyrag.mars.labels import split_pair
from polyrag.meta_eval.memerag import ANNOTATION_LIST_VARIANTS, ONE_LABEL_HINT
from polyrag.systems.answer_files import LANG, SUFFIXES, passage_file_spec, reads_answer_files

# Matched with fullmatch: a pattern ending in $ also accepts a name with a final line break.
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
LANGUAGE_KEY = re.compile(r"[a-z]{2,3}(-[a-z]{2,3})?")
META_EVAL_RESERVED = ("data", "scores", "e5-similarity", "nli", "mars")
#: Data sources whose loaders set no reference answer (the reference judge's similarity needs one).
SOURCES_WITHOUT_REFERENCE_ANSWERS = ("mirage_bench", "miracl")


def _with_defaults(validator_class):
    """A validator that fills in ``default`` values of properties as it validates (like snakemake's)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema and name not in instance:
                    instance[name] = _copy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _copy(value: Any) -> Any:
    return yaml.safe_load(yaml.safe_dump(value))


def _key_path(path: Iterable[Any]) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in known)
        where = _key_path(error.absolute_path)
        keys = ", ".join(f"{where}.{k}" if where != "(top level)" else k for k in unknown)
        return f"unknown key {keys} (allowed: {', '.join(sorted(known))})"
    if error.validator in ("oneOf", "anyOf"):  # jsonschema says only "not valid under any of the given schemas"
        alternatives = " or ".join(_alternative(schema) for schema in error.validator_value)
        return f"{_key_path(error.absolute_path)}: {error.instance!r} is none of the allowed forms: {alternatives}"
    return f"{_key_path(error.absolute_path)}: {error.message}"


def _alternative(schema: dict) -> str:
    """One branch of a oneOf in words: its values, or its type and keys."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type", "a value")
    if kind == "object" and "properties" in schema:
        required = set(schema.get("required", []))
        keys = ", ".join(f"{key} (required)" if key in required else key for key in schema["properties"])
        return f"a mapping with keys {keys}"
    if kind == "array" and "items" in schema:
        return f"a list of {_alternative(schema['items'])}"
    return f"a {kind}" if isinstance(kind, str) else "a " + " or ".join(kind)


def check_unique_keys(path: str | Path) -> None:
    """Refuse a config file that repeats a key in one mapping: YAML loaders (Snakemake's too) keep
    the last silently, so a second ``arena:`` block would drop the first's settings."""
    path = Path(path)
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return  # Snakemake read it; a file YAML cannot compose (JSON with tabs) is left to its loader
    if isinstance(root, yaml.MappingNode) and any(key.value == "__use_yte__" for key, _ in root.value):
        return  # a yte template: its ?if and ?else keys may repeat by design
    constructor = yaml.SafeLoader("")
    seen_nodes = set()

    def walk(node, where: list[str]) -> None:
        if id(node) in seen_nodes:  # an alias to a node already checked
            return
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, [*where, str(index)])
        if not isinstance(node, yaml.MappingNode):
            return
        first_line = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = constructor.construct_object(key_node)  # `yes` and `true`, `10` and `0xA` are one key
            name = ".".join([*where, str(key)])
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(f"{path}: line {line}: duplicate key {name} (first at line {first_line[key]}); "
                                  "YAML would keep only the last one: merge the two")
            first_line[key] = line
            walk(value_node, [*where, str(key)])

    walk(root, [])


def check_names(config: dict, source: str) -> None:
    """Model and judge names and language keys become file names and wildcards: ASCII letters,
    digits, '.', '_' and '-' only, checked before the schema so that the message says why."""
    named = []  # (where in the config, what it names, the name)
    for section, kind in {"models": "model", "judges": "judge"}.items():
        names = config.get(section)
        for name in names if isinstance(names, dict) else {}:
            shown = name if isinstance(name, str) and name.isprintable() else repr(name)  # one line
            named.append((f"{section}.{shown}", kind, name))
    finetune = config.get("finetune")
    if isinstance(finetune, dict) and isinstance(finetune.get("name"), str):  # other types: the schema says
        named.append(("finetune.name", "model", finetune["name"]))
    for where, kind, name in named:
        if not isinstance(name, str) or not MODEL_NAME.fullmatch(name) or "__" in name:
            hint = " (quote it in YAML to make it text)" if not isinstance(name, str) else ""
            raise ConfigError(f"{source}: {where}: invalid {kind} name {name!r}{hint}; names match "
                              "[A-Za-z0-9][A-Za-z0-9._-]* and never contain '__' (it separates pairs in file names)")
    languages = config.get("languages")
    for index, lang in enumerate(languages if isinstance(languages, list) else []):
        if isinstance(lang, str) and not LANGUAGE_KEY.fullmatch(lang):
            raise ConfigError(f"{source}: languages.{index}: invalid language key {lang!r}; a key is an ISO 639 "
                              "code (de) or a question-passage pair (de-en)")


def check_judge_backends(config: dict, source: str) -> None:
    """A system that cannot judge (a mock system, a system read from files) named as a judge is
    refused before the schema, whose message would only list the judge kinds."""
    judges = config.get("judges")
    for name, entry in judges.items() if isinstance(judges, dict) else ():
        backend = entry.get("backend") if isinstance(entry, dict) else None
        if isinstance(backend, str) and backend in LLM_BACKENDS and not LLM_BACKENDS[backend].judges:
            what = ("its answers are read from files, it is no language model" if not LLM_BACKENDS[backend].language_model
                    else "it answers from gold data and reads no prompt")
            raise ConfigError(f"{source}: judges.{name}.backend: {backend} is a system under test that cannot judge "
                              f"({what}); a judge is one of {', '.join(KINDS)}")


def check_language_files(prefix: str, files: dict[str, str | None], what: str, example: str) -> None:
    """Files given one per language key (the first of ``files`` holds {lang}), of a type polyrag reads:
    a system's answers and corpus, or a model's passage file and corpus. ``prefix``: the source and key."""
    for key, path in files.items():
        if path is not None:
            check_placeholders(f"{prefix}.{key}", path)
    first, pattern = next(iter(files.items()))
    if LANG not in pattern:
        raise ConfigError(f"{prefix}.{first}: {pattern!r} has no {LANG}; {what} one file per language key (e.g. {example})")
    for key, path in files.items():
        if path is not None and not path.endswith(SUFFIXES):
            raise ConfigError(f"{prefix}.{key}: {path!r} is neither .jsonl nor .parquet (the file type is read from the "
                              "extension)")


def validate_config(config: dict, schema_path: str | Path, source: str = "config",
                    workflow_dir: str | Path | None = None, check_models: bool = False) -> dict:
    """Validate ``config`` in place, filling defaults; raise ConfigError naming ``source`` and the key.

    ``workflow_dir`` (default: the schema's parent folder) anchors relative data paths that do
    not exist in the working directory (``resolve_local_data``). ``check_models``: also check that
    every model it names can be loaded or reached from here (``polyrag.config.models``; where the
    run starts, not in each job)."""
    if not isinstance(config, dict) or not config:
        raise ConfigError(f"{source}: the config is empty; see config.yaml for an example")
    check_names(config, source)
    check_judge_backends(config, source)
    with open(schema_path, encoding="utf-8") as handle:
        schema = yaml.safe_load(handle)
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    error = best_match(validator.iter_errors(config))
    if error is not None:
        raise ConfigError(f"{source}: {_describe(error)}")
    check_model_languages(config, source)
    check_results_dir(config, source)
    workflow_dir = Path(workflow_dir) if workflow_dir else Path(schema_path).resolve().parent.parent
    resolve_local_data(config, workflow_dir)
    check_mock_passages(config, source)
    add_baselines(config, source)
    check_retrieval(config, source)
    add_systems(config, source)
    check_semantics(config, source)
    if config["finetune"] is not None:
        check_finetune(config, source)
        add_student(config)
        # The student's entry gets the defaults of its backend like any model's.
        error = best_match(validator.iter_errors(config))
        if error is not None:
            raise ConfigError(f"{source}: finetune.student (as models.{config['finetune']['name']}): {_describe(error)}")
    check_judges(config, source)  # after the student and the baselines joined: a judge's contestants may name them
    if config["arena"]["human_labels"] is not None:
        check_human_labels(config, source)  # after the student joined: its judge may judge the student
    check_local_data(config, source, finetune_languages(config) if config["finetune"] else [],
                     mars_gold_pairs(config) if config["mars"] else [], workflow_dir)
    check_known_truths(config, source)
    if check_models:
        check_named_models(config, source)
    return config


def check_model_languages(config: dict, source: str) -> None:
    """A model's or a system's ``languages:`` names only language keys of the run (the schema
    refuses an empty or repeated list); a judge judges every language and takes none."""
    known = config["languages"]
    for section in ("models", "systems"):
        for name, entry in (config.get(section) or {}).items():
            declared = entry.get("languages")
            if declared is None:
                continue
            unknown = [lang for lang in declared if lang not in known]
            if unknown:
                raise ConfigError(f"{source}: {section}.{name}.languages: {', '.join(map(repr, unknown))} "
                                  f"{'is' if len(unknown) == 1 else 'are'} not among the run's languages "
                                  f"(known: {', '.join(known)}); name a subset of languages:, or drop the key "
                                  "to answer every one")
    for name, entry in config["judges"].items():
        if entry.get("languages") is not None:
            raise ConfigError(f"{source}: judges.{name}.languages: a judge judges every language of the run; "
                              "drop the key (a model takes languages: under models:)")


def check_known_truths(config: dict, source: str) -> None:
    """A check under checks: needs what it checks to be in the config (after the student joined)."""
    problem = lacking(config)
    if problem is not None:
        name, message = problem
        raise ConfigError(f"{source}: checks.{name}: {message}")


def check_semantics(config: dict, source: str) -> None:
    """Cross-key checks: names that must refer to other parts of the config."""
    languages = config["languages"]
    data = config["data"]
    if data["source"] != "xquad":
        crossed = [lang for lang in languages if "-" in lang]
        if crossed:
            raise ConfigError(
                f"{source}: languages: {crossed[0]!r} is a question-passage pair, "
                f"which only data.source: xquad supports (source is {data['source']!r})"
            )
    if data["source"] == "demo":
        demo_dir = Path(data["dir"])
        missing = [lang for lang in languages if not (demo_dir / f"{lang}.jsonl").exists()]
        if missing:
            available = sorted(p.stem for p in demo_dir.glob("*.jsonl"))
            raise ConfigError(
                f"{source}: languages: no demo data for {missing} in {demo_dir} (available: {available})"
            )
    llm_features = config["features"]["llm"]
    if llm_features is not None:
        judge = config["judges"].get(llm_features["judge"])
        if judge is None or not judge_kind(judge, llm_features["judge"]).sends_prompts:
            raise ConfigError(f"{source}: features.llm.judge: {llm_features['judge']!r} is not an LLM judge under judges:")
    arena_judge = config["arena"]["judge"]
    if arena_judge is not None and arena_judge not in config["judges"]:
        raise ConfigError(f"{source}: arena.judge: {arena_judge!r} is not a judge under judges:")
    unknown = [lang for lang in config["arena"]["budget_by_language"] if lang not in languages]
    if unknown:
        raise ConfigError(f"{source}: arena.budget_by_language: {unknown} not among languages {languages}")
    if config["judges"] and len(judged_models(config)) < 2:
        raise ConfigError(f"{source}: models: pairwise judging needs at least 2 models with judged: true, "
                          f"found {judged_models(config)}")
    meta_eval = config["meta_eval"]
    if meta_eval is not None:
        if meta_eval["variant"] in ANNOTATION_LIST_VARIANTS:  # the loader would stop on the first sentence
            raise ConfigError(f"{source}: meta_eval.variant: {meta_eval['variant']} labels each sentence with a "
                              f"list of annotations (one per annotator); {ONE_LABEL_HINT}")
        for name in meta_eval["llm_judges"]:
            judge = config["judges"].get(name)
            if judge is None or not judge_kind(judge, name).sends_prompts:
                raise ConfigError(f"{source}: meta_eval.llm_judges: {name!r} is not an LLM judge under judges:")
        if "nli" in meta_eval["scorers"] and config["features"]["nli"] is None:
            raise ConfigError(f"{source}: meta_eval.scorers: nli needs an NLI model under features.nli")
        if "mars" in meta_eval["scorers"] and (config["mars"] is None or not {"af", "ar"} <= set(config["mars"]["metrics"])):
            raise ConfigError(f"{source}: meta_eval.scorers: mars needs mars: with the af and ar judges (mars.metrics)")
    reserved = [name for name in config["judges"] if name in META_EVAL_RESERVED]
    if reserved:
        raise ConfigError(f"{source}: judges: {reserved[0]!r} is reserved (results/meta_eval/{reserved[0]}/)")
    filter_model = data["miracl"]["time_filter_model"]
    if filter_model is not None and filter_model not in config["models"]:
        raise ConfigError(f"{source}: data.miracl.time_filter_model: {filter_model!r} is not a model under models:")
    if filter_model is not None and reads_answer_files(config["models"][filter_model]):
        raise ConfigError(f"{source}: data.miracl.time_filter_model: {filter_model!r} reads its answers from files; "
                          "filtering questions needs a language model")
    for name, entry in config["models"].items():
        if entry["backend"] == "mock" and not entry.get("grounded") and "wrong_language" in entry["corruptions"]:
            unknown = [lang for lang in entry["wrong_language_from"] or [] if lang not in languages]
            if unknown:
                raise ConfigError(
                    f"{source}: models.{name}.wrong_language_from: {unknown} not among languages {languages}"
                )
            for lang in languages:
                if wrong_language_source(entry, lang, languages) is None:
                    raise ConfigError(
                        f"{source}: models.{name}: the wrong_language corruption needs a language other than "
                        f"{lang!r} among {entry['wrong_language_from'] or languages}"
                    )
        if entry["backend"] == "mock" and (entry.get("grounded") or entry["error_rate"] > 0):
            check_mock_refusals(name, languages, source)
        if entry["backend"] == "transformers" and ("model" in entry) == ("package" in entry):
            raise ConfigError(f"{source}: models.{name}: a transformers model needs exactly one of model or package")
        if entry["backend"] == "llama_cpp" and not (entry.get("model_path") or entry.get("package")):
            raise ConfigError(f"{source}: models.{name}: a llama_cpp model needs model_path or package")
        if reads_answer_files(entry):
            check_language_files(f"{source}: models.{name}", {"answers": entry["answers"], "corpus": entry["corpus"]},
                                 "a system's answers are", f"{name}/{LANG}.jsonl")
        if spec := passage_file_spec(entry):
            check_language_files(f"{source}: models.{name}.passages", {"file": spec["file"], "corpus": spec.get("corpus")},
                                 "the passages are", f"my_run/{LANG}.jsonl")
    if config["mars"] is not None:
        check_mars(config, source)


def check_human_labels(config: dict, source: str) -> None:
    human_labels = config["arena"]["human_labels"]
    for key in ("judge", "stand_in"):
        name = human_labels[key]
        if name is not None and name not in config["judges"]:
            raise ConfigError(f"{source}: arena.human_labels.{key}: {name!r} is not a judge under judges:")
    judge, stand_in = human_labels["judge"], human_labels["stand_in"]
    if stand_in == judge:
        raise ConfigError(f"{source}: arena.human_labels.stand_in: the stand-in labeller {judge!r} is the judge "
                          "itself; its labels would only repeat the judge's verdicts")
    if stand_in is not None:
        missing = set(judge_contestants(config, judge)) - set(judge_contestants(config, stand_in))
        if missing:
            raise ConfigError(f"{source}: arena.human_labels.stand_in: {stand_in!r} does not judge {sorted(missing)}, "
                              f"which the judge {judge!r} does: it could not label their units")
    for lang, path in human_labels["labels"].items():
        if lang not in config["languages"]:
            raise ConfigError(f"{source}: arena.human_labels.labels: {lang!r} is not among languages {config['languages']}")
        if not Path(path).exists():
            raise ConfigError(f"{source}: arena.human_labels.labels.{lang}: {path} does not exist")


def check_judges(config: dict, source: str) -> None:
    """Judge-only keys stay on judges; contestants are judged models; panel members are judges."""
    for name, entry in config["models"].items():
        for key in ("contestants", "max_questions"):
            if entry.get(key) is not None:
                raise ConfigError(f"{source}: models.{name}.{key}: only a judge under judges: takes {key}")
    for name, entry in config["judges"].items():
        for key in ("passages", "baselines", "generator", SYSTEM):
            if key in entry:
                raise ConfigError(f"{source}: judges.{name}.{key}: only a model under models: takes {key} "
                                  "(a judge reads the passages each answer was given)")
    judged = judged_models(config)
    data_source = config["data"]["source"]
    for name, entry in config["judges"].items():
        if (entry["backend"] == "reference" and entry["weights"]["similarity"]
                and data_source in SOURCES_WITHOUT_REFERENCE_ANSWERS):
            raise ConfigError(
                f"{source}: judges.{name}.weights.similarity: the reference judge {name!r} compares answers with "
                f"the reference answer, which data.source {data_source} does not have; set "
                f"judges.{name}.weights.similarity: 0 (citations and language only) or use another judge")
        unknown = [model for model in entry.get("contestants") or [] if model not in judged]
        if unknown:
            raise ConfigError(f"{source}: judges.{name}.contestants: {unknown} are not models with judged: true "
                              f"(judged models: {judged})")
        if judge_kind(entry, name).scheduling != "panel":
            continue
        for member in entry["members"]:
            if member not in config["judges"]:
                raise ConfigError(f"{source}: judges.{name}.members: {member!r} is not a judge under judges:")
            if judge_kind(config["judges"][member], member).scheduling == "panel":
                raise ConfigError(f"{source}: judges.{name}.members: {member!r} is a panel; a panel's members "
                                  "are judges that give verdicts themselves")
        if not judge_pairs(config, name):
            raise ConfigError(f"{source}: judges.{name}.members: no model pair is judged by every member (their "
                              f"contestants: { {m: judge_contestants(config, m) for m in entry['members']} }); a "
                              "panel judges the games every member judged")


def check_mock_passages(config: dict, source: str) -> None:
    """A mock system's answers depend on its passages only when it is ``grounded``: a corrupting
    mock (``error_rate``) answers from the question's gold data whatever it is given, so it takes
    no other passages and no baselines. A grounded mock's errors come from its passages alone."""
    for name, entry in config["models"].items():
        if entry["backend"] != "mock":
            continue
        if entry.get("grounded"):
            if "error_rate" in entry:
                raise ConfigError(f"{source}: models.{name}.error_rate: a grounded mock is right exactly when it "
                                  "was given a relevant passage; it takes no error_rate")
            continue
        if "error_rate" not in entry:
            raise ConfigError(f"{source}: models.{name}: a mock system needs error_rate (or grounded: true)")
        for key, allowed in (("passages", "question"), ("baselines", None)):
            if entry.get(key) and entry[key] != allowed:
                raise ConfigError(f"{source}: models.{name}.{key}: a mock with an error_rate answers from the "
                                  "question's gold data whatever passages it is given; use grounded: true "
                                  "(right exactly when a relevant passage is among those given)")


def check_mock_refusals(name: str, languages: list[str], source: str) -> None:
    """A mock system that errs can refuse (a corruption, and the fallback of the others; a grounded
    mock given no passage): every question language needs its refusal in
    polyrag/prompts/mock_refusal.yaml."""
    missing = sorted({key.split("-")[0] for key in languages if refusal(key.split("-")[0]) is None})
    if missing:
        raise ConfigError(f"{source}: models.{name}: a mock system's refusal has no translation in {missing} "
                          "(add it to polyrag/prompts/mock_refusal.yaml)")


def check_mars(config: dict, source: str) -> None:
    mars = config["mars"]
    unknown = [lang for lang in mars["languages"] or [] if lang not in config["languages"]]
    if unknown:
        raise ConfigError(f"{source}: mars.languages: {unknown} not among languages {config['languages']}")
    generator = config["models"].get(mars["generator"])
    if generator is None or generator["backend"] == "mock" or reads_answer_files(generator):
        raise ConfigError(f"{source}: mars.generator: {mars['generator']!r} is not an LLM under models: "
                          "(mock systems and systems read from files cannot write questions)")
    if mars["corpus"]["source"] == "data":
        passage_languages = {lang.split("-")[-1] for lang in config["languages"]}
        for pair in mars_pairs(config):
            passage_lang, _ = split_pair(pair)
            if passage_lang not in passage_languages:
                raise ConfigError(
                    f"{source}: mars.pairs: {pair}: the corpus (mars.corpus.source: data) has no passages in "
                    f"{passage_lang!r}; the data languages have passages in {sorted(passage_languages)}")
    calibration = mars["calibration"]
    if calibration["source"] == "tsv":
        if not calibration["path"]:
            raise ConfigError(f"{source}: mars.calibration.path: a calibration set of source tsv needs a path")
        if not Path(calibration["path"]).exists():
            raise ConfigError(f"{source}: mars.calibration.path: {calibration['path']} does not exist")
    if calibration["source"] == "memerag":
        if config["meta_eval"] is None:
            raise ConfigError(f"{source}: mars.calibration.source: memerag reads MEMERAG through meta_eval:, "
                              "which is not configured")
        if "mars" in config["meta_eval"]["scorers"]:
            raise ConfigError(
                f"{source}: mars.calibration.source: memerag with meta_eval.scorers: mars would meta-evaluate the "
                "MARS judges on the MEMERAG labels that also correct their scores (the calibration set); use "
                "mars.calibration.source gold or tsv, or drop mars from meta_eval.scorers")
        unlabelled = [m for m in mars["metrics"] if m in ("cr", "lc")]
        if unlabelled:
            raise ConfigError(
                f"{source}: mars.metrics: MEMERAG labels only answer relevance and faithfulness, not {unlabelled} "
                "(set mars.metrics to [ar, af] or use mars.calibration.source gold or tsv)")
    few_shot = mars["few_shot"]["file"]
    if few_shot is not None and not Path(few_shot).exists():
        raise ConfigError(f"{source}: mars.few_shot.file: {few_shot} does not exist")
    if config["data"]["source"] == "xquad" and config["data"]["max_questions"] is None:
        # Evaluated XQuAD questions never serve as gold data: evaluating all leaves MARS none.
        raise ConfigError(
            f"{source}: data.max_questions: null evaluates every XQuAD question, which leaves none for MARS's gold "
            "data (few-shot examples, calibration set, mock systems); set data.max_questions (e.g. 100 per language)")


def check_finetune(config: dict, source: str) -> None:
    finetune = config["finetune"]
    name, teacher = finetune["name"], finetune["teacher"]
    if name in config["models"] and config["models"][name].get("adapter") != finetune_adapter_dir(config):  # validated twice
        raise ConfigError(f"{source}: finetune.name: {name!r} is already a model under models: (the student joins under it)")
    control = control_name(config)
    if control in config["models"] and not config["models"][control].items() >= control_entry(config).items():
        raise ConfigError(f"{source}: finetune.name: the student's control {control!r} is already a model under models: "
                          "(rename the model, or set finetune.control: false)")
    if teacher not in config["models"]:
        raise ConfigError(f"{source}: finetune.teacher: {teacher!r} is not a model under models: "
                          f"(models: {', '.join(config['models'])})")
    if reads_answer_files(config["models"][teacher]):
        raise ConfigError(f"{source}: finetune.teacher: {teacher!r} reads its answers from files; a teacher answers the "
                          "training questions (finetune.training), which no file of it does")
    try:
        check_student(finetune["student"])
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None
    if finetune["student"]["serve"] == "vllm" and "model" not in finetune["student"]:
        raise ConfigError(f"{source}: finetune.student.serve: vllm serves a Hugging Face model (`model`), not a GGUF `package`")
    trainer = finetune["trainer"]
    if trainer["batch_size"] % min(trainer["per_device_batch_size"], trainer["batch_size"]):
        raise ConfigError(f"{source}: finetune.trainer.batch_size ({trainer['batch_size']}) must be a multiple of "
                          f"finetune.trainer.per_device_batch_size ({trainer['per_device_batch_size']})")
    training = finetune["training"]
    if training["source"] == "demo":
        directory = Path(training["dir"] or "")
        missing = [lang for lang in finetune_languages(config) if not (directory / f"{lang}.jsonl").is_file()]
        if not training["dir"] or missing:
            raise ConfigError(f"{source}: finetune.training.dir: no training questions for {missing} in {training['dir']}")
