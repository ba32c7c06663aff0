"""Decoding the demo's Gemma answers one at a time against several side by side, printed as a table.

llama-cpp-python's ``Llama`` decodes one sequence at a time, which is how polyrag serves GGUF
models. llama.cpp itself can hold several sequences in one batch: each decoding step then reads
the weights once for all of them. This measures, with llama-cpp-python's low-level API and greedy
decoding, on the first N English demo prompts (as config.yaml's gemma-270m gets them):
seconds of prompt processing and of decoding, decoding tokens/s, and how many of the N token
sequences equal the one-at-a-time ones (batched matrix products round differently).

    .venv/bin/python benchmarks/bench_batched_decoding.py [--sequences 8] [--tokens 60] [--threads 2]

Measure on idle cores. Not a path polyrag serves by: docs/benchmarks.md says why.
"""

from __future__ import annotations

import argparse
import ctypes
import time
from pathlib import Path

import llama_cpp as ll
import numpy as np
import pandas as pd
import yaml

from polyrag.config.queries import generation_settings
from polyrag.config.validate import validate_config
from polyrag.data.demo import load_demo
from polyrag.generate.answers import build_requests
from polyrag.llm.chat_text import messages_to_text
from polyrag.llm.weights import gguf_from_package

REPO = Path(__file__).resolve().parent.parent
BATCH = 512  # llama.cpp's default n_batch, as polyrag's backend uses
MODEL = "gemma-270m"  # config.yaml's entry


@ll.llama_log_callback
def quiet(level, text, user_data):  # llama.cpp logs every load and context to stderr
    pass


def demo_config() -> dict:
    path = REPO / "config.yaml"
    return validate_config(yaml.safe_load(path.read_text()), REPO / "schemas" / "config.schema.yaml", str(path),
                           workflow_dir=REPO)


def demo_prompts(config: dict, count: int) -> list[str]:
    """The demo's first ``count`` English prompts as gemma-270m gets them (its response prefix included)."""
    records = load_demo("en", REPO / "resources" / "demo")[:count]
    requests = build_requests(records, generation_settings(config, MODEL))
    return [r.prompt if r.prompt else messages_to_text(r.messages) for r in requests]


def tokenize(vocab, text: str) -> list[int]:
    data = text.encode()
    ids = (ll.llama_token * (len(data) + 16))()
    n = ll.llama_tokenize(vocab, data, len(data), ids, len(ids), True, True)
    return list(ids[:n])


def decode_greedy(model, prompts: list[list[int]], side_by_side: int, tokens: int, threads: int) -> dict:
    """Greedy tokens of every prompt, ``side_by_side`` sequences per llama.cpp batch."""
    params = ll.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = 1024 * side_by_side, BATCH, BATCH
    params.n_seq_max, params.n_threads, params.n_threads_batch = side_by_side, threads, threads
    params.kv_unified = True
    context = ll.llama_init_from_model(model, params)
    n_vocab = ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(model))
    batch = ll.llama_batch_init(BATCH, 0, side_by_side)

    def put(j: int, token: int, position: int, sequence: int, wants_logits: bool) -> None:
        batch.token[j], batch.pos[j], batch.n_seq_id[j] = token, position, 1
        batch.seq_id[j][0], batch.logits[j] = sequence, wants_logits

    def argmax(j: int) -> int:
        return int(np.ctypeslib.as_array(ll.llama_get_logits_ith(context, j), shape=(n_vocab,)).argmax())

    outputs, prompt_s, decode_s = [], 0.0, 0.0
    for first in range(0, len(prompts), side_by_side):
        group = prompts[first:first + side_by_side]
        ll.llama_memory_clear(ll.llama_get_memory(context), True)
        start = time.perf_counter()
        generated = []
        for sequence, ids in enumerate(group):
            for chunk_start in range(0, len(ids), BATCH):
                chunk = ids[chunk_start:chunk_start + BATCH]
                batch.n_tokens = len(chunk)
                for j, token in enumerate(chunk):
                    put(j, token, chunk_start + j, sequence, chunk_start + j == len(ids) - 1)
                if ll.llama_decode(context, batch) != 0:
                    raise RuntimeError("llama_decode failed on a prompt")
            generated.append([argmax(len(chunk) - 1)])
        prompt_s += time.perf_counter() - start
        positions = [len(ids) for ids in group]
        start = time.perf_counter()
        for _ in range(tokens - 1):
            batch.n_tokens = len(group)
            for sequence in range(len(group)):
                put(sequence, generated[sequence][-1], positions[sequence], sequence, True)
                positions[sequence] += 1
            if ll.llama_decode(context, batch) != 0:
                raise RuntimeError("llama_decode failed while decoding")
            for sequence in range(len(group)):
                generated[sequence].append(argmax(sequence))
        decode_s += time.perf_counter() - start
        outputs += generated
    ll.llama_batch_free(batch)
    ll.llama_free(context)
    return {"outputs": outputs, "prompt_s": prompt_s, "decode_s": decode_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", type=int, default=8, help="prompts, all decoded side by side in the second run")
    parser.add_argument("--tokens", type=int, default=60, help="greedy tokens per answer (the demo's are about 60)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    ll.llama_log_set(quiet, ctypes.c_void_p())
    ll.llama_backend_init()
    config = demo_config()
    path = gguf_from_package(config["models"][MODEL]["package"], REPO / ".cache" / "polyrag")
    model = ll.llama_model_load_from_file(str(path).encode(), ll.llama_model_default_params())
    vocab = ll.llama_model_get_vocab(model)
    prompts = [tokenize(vocab, text) for text in demo_prompts(config, args.sequences)]
    one_at_a_time = decode_greedy(model, prompts, 1, args.tokens, args.threads)
    rows = []
    for side_by_side, run in ((1, one_at_a_time), (len(prompts), decode_greedy(model, prompts, len(prompts), args.tokens, args.threads))):
        same = [a == b for a, b in zip(run["outputs"], one_at_a_time["outputs"])]
        parted = [next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
                  for a, b, equal in zip(run["outputs"], one_at_a_time["outputs"], same) if not equal]
        rows.append({"sequences per batch": side_by_side, "prompt s": run["prompt_s"], "decode s": run["decode_s"],
                     "decode tokens/s": len(prompts) * (args.tokens - 1) / run["decode_s"],
                     "equal to one at a time": f"{sum(same)} of {len(same)}",
                     "first differing token": ", ".join(map(str, parted)) or "-"})
    ll.llama_model_free(model)
    print(f"\nGreedy decoding of {len(prompts)} demo prompts ({np.mean([len(p) for p in prompts]):.0f} tokens on average), "
          f"{args.tokens} tokens each, {args.threads} threads, Gemma 3 270M Q4_K_M")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
