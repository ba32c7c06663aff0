"""The fine-tuned student and its control on two paths: `transformers` (the adapter merged into the
float32 checkpoint) against llama.cpp (the adapter merged into the GGUF, adapted matrices in Q8_0).

    .venv/bin/python benchmarks/bench_student_paths.py RUN_DIR [--per-language 12] [--temperature 0]

RUN_DIR is a finished demo run (its results/data and the trained adapter under
results/finetune/<name>/adapter). Every prompt is answered on both paths with the demo's
settings (greedy by default, so that two paths that compute the same function give the same
text); prints seconds per answer, the share of identical outputs and of parseable answers per
path. No LLM cache: every answer is computed here. Measure on idle cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import yaml

from polyrag.answer_parsing import parse_sectioned
from polyrag.config.queries import control_name, generation_settings
from polyrag.config.validate import validate_config
from polyrag.data.records import read_questions
from polyrag.finetune.student import student_entry
from polyrag.generate.answers import build_requests
from polyrag.llm.factory import make_backend

REPO = Path(__file__).resolve().parent.parent


def answer_all(entry: dict, requests: list, cache_dir: Path, seed: int) -> tuple[list[str | None], float]:
    backend = make_backend("student", entry, cache_dir=cache_dir, seed=seed)
    start = time.perf_counter()
    texts = [None] * len(requests)
    for i, response in backend.stream(requests):
        texts[i] = response.text
    seconds = time.perf_counter() - start
    backend.close()
    return texts, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--config", type=Path, default=REPO / "config.yaml")
    parser.add_argument("--per-language", type=int, default=12)
    parser.add_argument("--temperature", type=float, default=0.0)
    args = parser.parse_args()
    config = validate_config(yaml.safe_load(args.config.read_text()), REPO / "schemas" / "config.schema.yaml",
                             str(args.config), workflow_dir=REPO)
    finetune = config["finetune"]
    student, control = finetune["name"], control_name(config)
    adapter = args.run_dir / "results" / "finetune" / student / "adapter"
    rows = []
    for name, with_adapter in ((student, True), (control, False)):
        settings = {**generation_settings(config, name), "temperature": args.temperature}
        requests = [request for lang in config["languages"]
                    for request in build_requests(read_questions(args.run_dir / "results" / "data" / f"{lang}.parquet")
                                                  [: args.per_language], settings)]
        outputs = {}
        for serve in ("transformers", "llama_cpp"):
            entry = student_entry({**finetune["student"], "serve": serve}, adapter if with_adapter else None,
                                  lora_targets=finetune["lora"]["target_modules"])
            if serve == "llama_cpp":
                entry["n_threads"] = 2
            texts, seconds = answer_all(entry, requests, args.run_dir / ".cache" / "polyrag", config["seed"])
            outputs[serve] = texts
            parsed = sum(parse_sectioned(t or "", []).answer is not None for t in texts)
            rows.append({"model": name, "path": serve, "answers": len(texts), "s_per_answer": seconds / len(texts),
                         "parsed": parsed})
        same = sum(a == b for a, b in zip(outputs["transformers"], outputs["llama_cpp"]))
        print(f"{name}: {same} of {len(requests)} outputs identical on both paths")
        for k, (a, b) in enumerate(zip(outputs["transformers"], outputs["llama_cpp"])):
            if a != b and k < 3:
                print(f"  differs, prompt {k}:\n    transformers: {a!r}\n    llama.cpp:    {b!r}")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
