"""Each backend's identity (the model part of every cache key) changes with what changes the answers
(an endpoint, a weights file, a checkpoint's content, a Hub commit, an adapter, a numeric option)
and stays the same when they do, and never holds an API key (issue 36, item 1)."""

from __future__ import annotations

import shutil

import pytest

from polyrag.llm.identity import endpoint, file_fingerprint, folder_fingerprint, model_source
from polyrag.llm.openai_backend import OpenAIBackend

SECRET = "sk-polyrag-test-secret-0123456789"


def openai_identity(**options) -> str:
    return OpenAIBackend(**{"model": "gemma-270m", "api_key_env": "POLYRAG_TEST_KEY", **options}).identity


def test_openai_identity_holds_the_endpoint_and_options_but_not_the_key(monkeypatch):
    """Before: `gemma-270m` for every server, so a second server's answers came from the first's cache."""
    monkeypatch.setenv("POLYRAG_TEST_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    first = openai_identity(base_url="http://127.0.0.1:8001/v1")
    assert first == "gemma-270m@http://127.0.0.1:8001/v1"
    assert openai_identity(base_url="http://127.0.0.1:8002/v1") == "gemma-270m@http://127.0.0.1:8002/v1"
    # The same server spelled alike is the same model, whichever key or client settings are used.
    monkeypatch.setenv("POLYRAG_TEST_KEY", "sk-another-key")
    assert openai_identity(base_url="HTTP://127.0.0.1:8001/v1/", concurrency=2, timeout=5, max_retries=0) == first
    # Credentials in the URL stay out; a served adapter or quantisation (extra_body) and the mode go in.
    assert openai_identity(base_url=f"https://user:{SECRET}@example.org/v1?api-key={SECRET}&api-version=2024-06-01") \
        == "gemma-270m@https://example.org/v1?api-version=2024-06-01"
    assert openai_identity(base_url="http://127.0.0.1:8001/v1", extra_body={"lora": "ckpt-2"}) \
        == first + '+extra_body={"lora": "ckpt-2"}'
    assert openai_identity(base_url="http://127.0.0.1:8001/v1", mode="completion") == first + "+mode=completion"
    # The OpenAI API itself keeps the plain model name (unchanged cache keys); OPENAI_BASE_URL is an endpoint.
    assert openai_identity() == openai_identity(base_url="https://api.openai.com/v1/") == "gemma-270m"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8001/v1")
    assert openai_identity() == first


def test_endpoint_drops_only_credentials():
    assert endpoint("http://u:p@Host.example:8080/v1/?token=x&deployment=a") == "http://host.example:8080/v1?deployment=a"


def test_file_and_folder_fingerprints_follow_the_content(tmp_path, monkeypatch):
    from polyrag.llm import identity

    monkeypatch.setattr(identity, "BLOCK_BYTES", 16)  # large-file sampling on small files
    big = tmp_path / "a" / "model.gguf"
    big.parent.mkdir()
    big.write_bytes(bytes(range(256)) * 40)  # 10240 bytes > 17 blocks of 16
    copy = tmp_path / "b" / "model.gguf"
    copy.parent.mkdir()
    shutil.copy(big, copy)
    assert file_fingerprint(big) == file_fingerprint(copy)
    data = bytearray(big.read_bytes())
    data[0] ^= 1  # a changed header
    copy.write_bytes(data)
    assert file_fingerprint(big) != file_fingerprint(copy)
    copy.write_bytes(big.read_bytes() + b"x")  # another length
    assert file_fingerprint(big) != file_fingerprint(copy)
    copy.write_bytes(big.read_bytes())
    assert folder_fingerprint(big.parent) == folder_fingerprint(copy.parent)
    (copy.parent / "config.json").write_text("{}")
    assert folder_fingerprint(big.parent) != folder_fingerprint(copy.parent)


def test_a_hub_model_is_named_by_the_commit_in_the_local_cache(tmp_path, monkeypatch):
    """An unpinned Hub id moves with its branch: the identity names the snapshot that was loaded."""
    import huggingface_hub.constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--org--tiny"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    assert model_source("org/tiny") == model_source("org/tiny", "main") == f"org/tiny@{commit}"
    assert model_source("org/tiny", "f" * 40) == f"org/tiny@{'f' * 40}"  # a pinned commit as given
    assert model_source("org/absent") == "org/absent"
    assert model_source("org/absent", "v1") == "org/absent@v1"
    # A local folder by its name and content, wherever it lies.
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    elsewhere = tmp_path / "moved" / "ckpt"
    shutil.copytree(folder, elsewhere)
    assert model_source(str(folder)) == model_source(str(elsewhere)) == f"ckpt#{folder_fingerprint(folder)}"


class RecordingLlama:
    """``llama_cpp.Llama`` without loading weights: the backend's own code decides the identity."""

    def __init__(self, model_path, **kwargs):
        self.model_path, self.metadata = model_path, {}


def test_llama_cpp_identity_is_the_gguf_file_content(tmp_path, monkeypatch):
    """Before: the file name alone, so another GGUF under the same name reused the old answers."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from polyrag.llm.llama_cpp_backend import LlamaCppBackend

    monkeypatch.setattr(llama_cpp, "Llama", RecordingLlama)
    first, second, same = (tmp_path / d / "model-q4_k_m.gguf" for d in ("v1", "v2", "copy"))
    for path, content in ((first, b"GGUF weights one"), (second, b"GGUF weights two"), (same, b"GGUF weights one")):
        path.parent.mkdir()
        path.write_bytes(content)
    identities = [LlamaCppBackend(model_path=str(p)).identity for p in (first, second, same)]
    assert identities[0] == f"model-q4_k_m.gguf#{file_fingerprint(first)}"
    assert identities[0] != identities[1] and identities[0] == identities[2]
    assert LlamaCppBackend(model_path=str(first), mode="completion").identity == identities[0] + "+mode=completion"


def test_an_outage_message_names_the_endpoint_without_its_credentials(monkeypatch):
    """A password in the URL never reaches the job's log."""
    from polyrag.errors import LLMUnavailable
    from polyrag.llm.client import LLM
    from polyrag.llm.types import Request

    from tests.helpers.proxy import FaultProxy

    monkeypatch.setenv("POLYRAG_TEST_KEY", SECRET)
    with FaultProxy("http://127.0.0.1:9", plan=["500"] * 10) as proxy:
        url = proxy.url.replace("http://", f"http://user:{SECRET}@")
        llm = LLM(OpenAIBackend(model="m", base_url=url, api_key_env="POLYRAG_TEST_KEY", max_retries=0))
        with pytest.raises(LLMUnavailable) as failure:
            llm.generate([Request(messages=[{"role": "user", "content": "hi"}], max_tokens=2)])
    assert f"'m' at {proxy.url} is unavailable" in str(failure.value) and SECRET not in str(failure.value)
