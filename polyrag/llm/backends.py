"""The one table of LLM backends: what each is, how the factory builds it, how the workflow schedules
it. One entry is no language model: ``file``, a user's own system whose answers come from files
(``polyrag.systems.answer_files``); it has a system's jobs and resources, and nothing to open. The factory (``polyrag.llm.factory``), the judge kinds (``polyrag.judge.kinds``), the cluster
resources (``polyrag.config.queries``) and the fine-tuned student (``polyrag.finetune.student``) read
it; the config schema lists the same names (tests/llm/test_backends.py checks that they agree).

Whether a backend's responses go through the durable cache is the backend class's ``cacheable``
(``polyrag.llm.base.Backend``): the LLM client reads it from every backend, also from those that
tests build by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from polyrag.registry import Plugin, Registry


@dataclass(frozen=True)
class LLMBackend(Plugin):
    #: Default cluster resources of a model's jobs, overridden by the model's own ``resources:``.
    resources: dict[str, int]
    #: The model is loaded into the job's process, so one job does all its work (a judge judges every
    #: pair in one job: ``local_weights``); otherwise a server or API answers, one job per pair.
    local_weights: bool
    #: What the factory passes to the class besides the entry's options: the model's ``name``,
    #: ``cache_dir``, ``seed`` and the job's granted ``threads``, each under the class's parameter name.
    context: dict[str, str]
    #: It can judge pairs (a mock system answers from gold data; it cannot).
    judges: bool = True
    #: It serves a LoRA adapter (``adapter``): the fine-tuned student can be served on it.
    adapters: bool = False
    #: It is a language model the factory opens (``open_llm``). False: a system whose answers are read
    #: from files (``implementation`` names the reader); it cannot judge, teach, write MARS's data or
    #: filter questions, and ``make_backend`` refuses it.
    language_model: bool = True


LLM_BACKENDS: Registry[LLMBackend] = Registry(
    "LLM backend",
    LLMBackend("openai", "polyrag.llm.openai_backend:OpenAIBackend",
               resources={"gpu": 0, "mem_mb": 4000, "runtime": 720, "threads": 1},
               local_weights=False, context={}),
    LLMBackend("vllm", "polyrag.llm.vllm_backend:VLLMBackend",
               resources={"gpu": 1, "mem_mb": 64000, "runtime": 720, "threads": 8},
               local_weights=True, context={"cache_dir": "cache_dir", "seed": "seed"}, adapters=True),
    LLMBackend("transformers", "polyrag.llm.transformers_backend:TransformersBackend",
               resources={"gpu": 1, "mem_mb": 32000, "runtime": 720, "threads": 4},
               local_weights=True, context={"cache_dir": "cache_dir", "threads": "threads"}, adapters=True),
    LLMBackend("llama_cpp", "polyrag.llm.llama_cpp_backend:LlamaCppBackend",
               resources={"gpu": 0, "mem_mb": 4000, "runtime": 240, "threads": 4},
               local_weights=True, context={"cache_dir": "cache_dir", "seed": "seed", "threads": "n_threads"},
               adapters=True),
    LLMBackend("mock", "polyrag.llm.mock:MockBackend",
               resources={"gpu": 0, "mem_mb": 2000, "runtime": 30, "threads": 1},
               local_weights=False, context={"name": "model_name", "seed": "seed"}, judges=False),
    LLMBackend("file", "polyrag.systems.answer_files:system_answers",
               resources={"gpu": 0, "mem_mb": 2000, "runtime": 30, "threads": 1},
               local_weights=False, context={}, judges=False, language_model=False),
)
