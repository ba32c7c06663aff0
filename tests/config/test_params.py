"""Params in the form Snakemake compares (polyrag/config/params.py): the text Snakemake stores for a
param (its repr) depends on what it means, not on key order or the folder; user files by content."""

from __future__ import annotations

import os
import shutil

import yaml

from polyrag.config.params import FileDigests, canonical, output_roots, relative_path, source_digests


def test_the_same_settings_in_any_key_order_have_one_text(tmp_path):
    written = {"source": "demo", "max_questions": 4, "miracl": {"revision": None, "dataset": "x"}, "langs": ["hi", "en"]}
    resorted = yaml.safe_load(yaml.safe_dump(written))  # yaml.safe_dump sorts keys, as many tools do
    assert repr(written) != repr(resorted)  # Snakemake's comparison without the canonical form
    assert repr(canonical(written, tmp_path)) == repr(canonical(resorted, tmp_path))
    assert canonical(written, tmp_path) == written  # the same settings, in order
    assert canonical(written, tmp_path)["langs"] == ["hi", "en"]  # a list's order is meaning: kept


def test_keys_of_mixed_types_are_ordered_without_comparing_a_number_to_text(tmp_path):
    assert repr(canonical({"b": 1, 2: 0, "a": 3, 1: 4}, tmp_path)) == "{1: 4, 2: 0, 'a': 3, 'b': 1}"


def test_a_script_iterates_the_keys_in_the_order_the_config_wrote_them(tmp_path):
    """Only the text Snakemake compares is sorted: the languages of a summary, the columns of a
    table follow the config's order."""
    value = canonical({"en": ["a"], "de": {"z": 1, "b": 2}}, tmp_path)
    assert list(value) == ["en", "de"] and list(value["de"]) == ["z", "b"]
    assert repr(value) == "{'de': {'b': 2, 'z': 1}, 'en': ['a']}"
    import pickle  # Snakemake hands params to a script pickled
    assert list(pickle.loads(pickle.dumps(value))) == ["en", "de"]


def test_paths_inside_the_working_directory_are_relative_and_others_are_kept(tmp_path):
    inside = str(tmp_path / "resources" / "demo")
    value = {"dir": inside, "files": [f"{tmp_path}/answers/{{lang}}.jsonl"], "elsewhere": "/opt/data/x.json",
             "name": "mock-0", "root": str(tmp_path), "sibling": f"{tmp_path}-other/x"}
    assert canonical(value, tmp_path) == {"dir": "resources/demo", "elsewhere": "/opt/data/x.json",
                                          "files": ["answers/{lang}.jsonl"], "name": "mock-0", "root": ".",
                                          "sibling": f"{tmp_path}-other/x"}
    # a folder copied elsewhere gives the same text
    assert repr(canonical({"dir": str(tmp_path / "copy" / "r")}, tmp_path / "copy")) == \
        repr(canonical({"dir": str(tmp_path / "r")}, tmp_path))


def test_a_path_named_through_a_link_to_the_working_directory_is_relative(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert relative_path(str(tmp_path / "real" / "a.jsonl"), tmp_path / "link") == "a.jsonl"


def test_a_file_changed_with_an_older_mtime_has_another_digest_and_an_unchanged_copy_the_same(tmp_path):
    import hashlib

    path = tmp_path / "answers.jsonl"
    path.write_text('{"query_id": "q1", "answer": "old"}\n')
    digests = FileDigests(tmp_path / "store.json")
    old = digests(path)
    assert old == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    before = path.stat()
    path.write_text('{"query_id": "q1", "answer": "new"}\n')  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns - 10**12))
    assert FileDigests(tmp_path / "store.json")(path) == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() != old
    shutil.copy2(path, tmp_path / "copy.jsonl")  # cp -p: another inode, the same content
    assert FileDigests(tmp_path / "store.json")(tmp_path / "copy.jsonl") == digests(path)


def test_a_stored_digest_is_reused_while_the_file_is_unchanged(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("x" * 100)
    FileDigests(tmp_path / "store.json")(path)
    store = (tmp_path / "store.json").read_text()
    # the stored entry is what a later process answers: forge it to see that the file is not read again
    (tmp_path / "store.json").write_text(store.replace(store.split('"sha256:')[1].split('"')[0], "f" * 64))
    assert FileDigests(tmp_path / "store.json")(path) == "sha256:" + "f" * 64


def test_an_unreadable_store_only_costs_a_reread(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("a")
    (tmp_path / "store.json").write_text("{not json")
    assert FileDigests(tmp_path / "store.json")(path).startswith("sha256:")
    assert FileDigests(None)(tmp_path / "missing.txt") is None  # Snakemake names a missing input itself


def test_a_folders_digest_follows_its_files(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_text("1")
    digests = FileDigests(None)
    first = digests(tmp_path / "d")
    (tmp_path / "d" / "a").write_text("2")
    assert FileDigests(None)(tmp_path / "d") != first


def test_only_files_no_rule_writes_are_digested_by_their_relative_path(tmp_path):
    roots = output_roots(["results/data/{lang}.parquet", "results/answers/{model}/{lang}.parquet"])
    assert roots == {"results"}
    (tmp_path / "corp").mkdir()
    (tmp_path / "corp" / "en.jsonl").write_text("{}")
    found = source_digests([str(tmp_path / "corp" / "en.jsonl"), "results/data/en.parquet"], roots, FileDigests(None),
                           tmp_path)
    assert list(found) == ["corp/en.jsonl"] and found["corp/en.jsonl"].startswith("sha256:")
