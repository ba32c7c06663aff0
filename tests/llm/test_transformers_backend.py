"""The transformers backend on a tiny random-initialised causal LM built here, with a tokenizer
trained on fixture text: the real code path (tokenise, batch with left padding, generate, decode)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is installed by `make test`")

from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from polyrag.errors import LLMUnavailable  # noqa: E402
from polyrag.llm.cache import ResponseCache  # noqa: E402
from polyrag.llm.chat_text import messages_to_text  # noqa: E402
from polyrag.llm.client import LLM  # noqa: E402
from polyrag.llm.transformers_backend import TransformersBackend, truncate_at_stop  # noqa: E402
from polyrag.llm.types import Request  # noqa: E402

from tests.helpers.environment import TORCH_TEST_DEVICE as DEVICE  # noqa: E402

TEXT = [
    "The Niger River flows into the Gulf of Guinea through a large delta .",
    "Der Niger mündet über ein großes Delta in den Golf von Guinea .",
    "Question : where does the river end ? Answer : in the gulf [d1#2] .",
    "##Reason : passage [d1#2] says so . ##Answer : the Gulf of Guinea [d1#2] .",
]
SPECIAL = ["[UNK]", "[PAD]", "[BOS]", "[EOS]"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(TEXT * 3, trainers.WordLevelTrainer(special_tokens=SPECIAL))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
    )
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def chat(text: str, **sampling) -> Request:
    return Request(messages=[{"role": "user", "content": text}], **sampling)


def test_greedy_batch_matches_single_generate(tiny_model):
    backend = TransformersBackend(str(tiny_model), device=DEVICE, batch_size=2)
    requests = [chat("Question : where does the river end ?", temperature=0, max_tokens=6),
                chat("Der Niger mündet", temperature=0, max_tokens=6),
                chat("the Gulf of Guinea", temperature=0, max_tokens=6)]
    out = dict(backend.stream(requests))
    assert all(out[i].ok for i in range(3))
    # Independent computation: one prompt, no padding, plain generate.
    model = LlamaForCausalLM.from_pretrained(tiny_model).to(DEVICE)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tiny_model)
    ids = tokenizer(messages_to_text(requests[1].messages), return_tensors="pt", add_special_tokens=False).to(DEVICE)
    expected = model.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    assert out[1].text == tokenizer.decode(expected[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)


def test_a_prompt_longer_than_the_context_is_a_row_and_the_others_are_answered(tiny_model):
    backend = TransformersBackend(str(tiny_model), device=DEVICE, batch_size=2)
    requests = [Request(prompt="the river", temperature=0, max_tokens=3),
                Request(prompt="the river " * 200, temperature=0, max_tokens=3),  # 400 words, 256 positions
                Request(prompt="the Gulf of Guinea", temperature=0, max_tokens=3)]
    out = dict(backend.stream(requests))
    assert out[0].ok and out[2].ok
    assert out[1].text is None and out[1].error == "prompt of 400 tokens does not fit the model's context of 256"


def test_a_dead_device_fails_the_job_after_caching_what_arrived(tiny_model, tmp_path):
    """The second batch finds the weights gone (moved to the meta device, as after a lost GPU):
    the job fails with LLMUnavailable, the first batch's answers are cached, a rerun finishes."""
    requests = [Request(prompt=f"the river {word}", temperature=0, max_tokens=3) for word in ("ends", "flows", "delta")]
    backend = TransformersBackend(str(tiny_model), device=DEVICE, batch_size=1)
    generate = backend._generate

    def device_lost_after_the_first_batch(batch, ids):
        answers = generate(batch, ids)
        backend.model.to("meta")
        return answers

    backend._generate = device_lost_after_the_first_batch
    with pytest.raises(LLMUnavailable, match=r"^answers: the transformers engine of .* failed: .*; "
                                             r"1 of 3 new responses arrived and are cached"):
        LLM(backend, ResponseCache(tmp_path / "c.sqlite")).generate(requests, desc="answers")
    rerun = LLM(TransformersBackend(str(tiny_model), device=DEVICE, batch_size=1), ResponseCache(tmp_path / "c.sqlite"))
    again = rerun.generate(requests)
    assert [r.cached for r in again] == [True, False, False] and all(r.ok for r in again)


def test_sampling_is_seeded(tiny_model):
    backend = TransformersBackend(str(tiny_model), device=DEVICE)
    request = chat("the river", temperature=1.0, max_tokens=12, seed=3)
    first = dict(backend.stream([request]))[0].text
    assert first == dict(backend.stream([request]))[0].text
    others = {dict(backend.stream([chat("the river", temperature=1.0, max_tokens=12, seed=s)]))[0].text for s in range(4, 9)}
    assert len(others | {first}) > 1


def test_chat_template_is_used_when_present(tiny_model, tmp_path):
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tiny_model)
    tokenizer.chat_template = "{% for m in messages %}[BOS] {{ m.content }} [EOS] {% endfor %}Answer :"
    tokenizer.save_pretrained(tiny_model)
    backend = TransformersBackend(str(tiny_model), device=DEVICE)
    request = chat("where does the river end ?", temperature=0, max_tokens=4)
    assert backend.prompt_text(request) == "[BOS] where does the river end ? [EOS] Answer :"
    assert dict(backend.stream([request]))[0].ok
    completion = TransformersBackend(str(tiny_model), device=DEVICE, mode="completion")
    assert completion.prompt_text(request) == "where does the river end ?"


def test_stop_strings():
    assert truncate_at_stop("Paris. ##Question: next", ["##Question", "\n\n"]) == "Paris. "
    assert truncate_at_stop("Paris", ["X"]) == "Paris"


def test_identity_follows_the_checkpoint_content_adapter_and_dtype(tiny_model, tmp_path):
    """Before: the folder path, so a checkpoint retrained into the same folder reused the old answers."""
    import shutil

    from peft import LoraConfig, get_peft_model

    folder = tmp_path / "v1" / "ckpt"
    shutil.copytree(tiny_model, folder)
    first = TransformersBackend(str(folder), device="cpu").identity
    assert first.startswith("ckpt#") and str(tmp_path) not in first
    copy = tmp_path / "elsewhere" / "ckpt"
    shutil.copytree(folder, copy)
    assert TransformersBackend(str(copy), device="cpu").identity == first  # the same weights elsewhere
    assert TransformersBackend(str(folder), device="cpu", dtype="float32").identity == first + "+dtype=float32"
    assert TransformersBackend(str(folder), device="cpu", mode="completion").identity == first + "+mode=completion"
    model = LlamaForCausalLM.from_pretrained(folder)
    adapters = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        peft_model = get_peft_model(LlamaForCausalLM.from_pretrained(folder),
                                    LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
        peft_model.save_pretrained(tmp_path / f"adapter-{seed}")
        adapters.append(TransformersBackend(str(folder), adapter=str(tmp_path / f"adapter-{seed}"), device="cpu").identity)
    assert adapters[0].startswith(first + "+lora:") and adapters[0] != adapters[1]
    torch.manual_seed(7)  # retrained into the same folder
    LlamaForCausalLM(model.config).save_pretrained(folder)
    retrained = TransformersBackend(str(folder), device="cpu").identity
    assert retrained.startswith("ckpt#") and retrained != first
