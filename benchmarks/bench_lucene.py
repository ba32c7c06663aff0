"""polyrag's BM25 analyzers against Lucene's, language by language (docs/benchmarks.md#bm25-against-lucene).

Prints (a) the tokens of sample sentences from polyrag's analyzer (``polyrag.retrieval.tokenize``)
and Lucene's, and (b) nDCG@10 (pytrec_eval) of polyrag's BM25 and Lucene's BM25, both k1 0.9 and
b 0.4, on XQuAD (every paragraph of a language is the corpus, each question's paragraph its one
relevant passage) and on the demo's questions (``polyrag.retrieval.corpus.demo_corpus``).

Lucene runs in its own environment (``make lucene-env``: Pyserini's wheel for Anserini's jar, and
pyjnius, no torch) on a Java 21+ JDK: this script starts itself there with ``--lucene-side``, which
imports nothing from polyrag. Lucene's analyzer for a language is Anserini's
(``AnalyzerMap.getLanguageSpecificAnalyzer``; English: ``DefaultEnglishAnalyzer``, Porter and
stopwords), else Lucene's own language analyzer (el, ro, ...), else ``StandardAnalyzer`` (Unicode
words, lower case: vi, sw, yo); the table names the class. Queries are Anserini's bag of words (a
term repeated in the question is boosted by its count).

    make bench-lucene        # or: .venv/bin/python benchmarks/bench_lucene.py --lucene-python .venv-lucene/bin/python

XQuAD's files come from ``--xquad-dir`` (default ``$POLYRAG_SHARED_DATA/xquad``); a language whose
file is not there is downloaded at XQuAD's pinned commit with ``--download-xquad`` (polyrag's
loader and cache), and otherwise listed as not measured.

``--export-stopwords`` (run with the Lucene environment's Python) writes the stopword list of every
Lucene language analyzer to ``polyrag/retrieval/stopwords/{lang}.txt``, the lists polyrag's
``stopwords: true`` drops.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

XQUAD_LANGUAGES = ["ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"]
DEMO_LANGUAGES = ["ar", "de", "en", "es", "hi", "zh"]
K1, B = 0.9, 0.4
#: Sample sentences for the token table (XQuAD's first question is added where a file is present).
SAMPLES = {
    "ar": "تتدفق الأنهار بسرعة إلى البحر.",
    "bn": "নদীগুলো দ্রুত সমুদ্রে প্রবাহিত হয়।",
    "de": "Die Flüsse fließen schnell ins Meer.",
    "el": "Οι ποταμοί ρέουν γρήγορα στη θάλασσα.",
    "en": "The rivers were flowing quickly into the sea.",
    "es": "Los ríos fluyen rápidamente hacia el mar.",
    "fa": "رودخانه‌ها به سرعت به دریا می‌ریزند.",
    "fi": "Joet virtaavat nopeasti mereen.",
    "fr": "Les rivières coulent rapidement vers la mer.",
    "hi": "नदियाँ समुद्र में तेज़ी से गिरती हैं।",
    "id": "Sungai-sungai mengalir dengan cepat ke laut.",
    "ja": "川は速く海に流れ込む。",
    "ko": "강물은 빠르게 바다로 흘러간다.",
    "ro": "Râurile curg repede în mare.",
    "ru": "Реки быстро текут в море.",
    "sw": "Mito inatiririka haraka kuelekea baharini.",
    "te": "నదులు వేగంగా సముద్రంలోకి ప్రవహిస్తాయి.",
    "th": "ทีมแพนเธอร์สยอมแพ้คะแนนเท่าไร",
    "tr": "Türkiye'nin başkenti Ankara'dır; İngiltere'de IŞIK ılık.",
    "vi": "Các con sông chảy nhanh ra biển.",
    "yo": "Àwọn odò ń ṣàn lọ sí òkun kíákíá.",
    "zh": "尼日尔河注入几内亚湾。",
}
#: Lucene's own analyzers for languages Anserini's AnalyzerMap lacks (and for exporting stopwords).
LUCENE_ANALYZERS = {
    "bg": "bg.BulgarianAnalyzer", "ca": "ca.CatalanAnalyzer", "ckb": "ckb.SoraniAnalyzer", "cs": "cz.CzechAnalyzer",
    "el": "el.GreekAnalyzer", "et": "et.EstonianAnalyzer", "eu": "eu.BasqueAnalyzer", "ga": "ga.IrishAnalyzer",
    "gl": "gl.GalicianAnalyzer", "hy": "hy.ArmenianAnalyzer", "lt": "lt.LithuanianAnalyzer", "lv": "lv.LatvianAnalyzer",
    "ne": "ne.NepaliAnalyzer", "ro": "ro.RomanianAnalyzer", "sr": "sr.SerbianAnalyzer", "ta": "ta.TamilAnalyzer",
}
JAVA_HOMES = ["/usr/lib/jvm/temurin-25-jdk-amd64", "/usr/lib/jvm/temurin-21-jdk-amd64"]


# ---------------------------------------------------------------- the Lucene side (no polyrag imports)

def start_jvm():
    if not os.environ.get("JAVA_HOME"):
        home = next((h for h in JAVA_HOMES if Path(h).is_dir()), None)
        if home is None:
            raise SystemExit(f"no Java 21+ JDK found (looked in {', '.join(JAVA_HOMES)}): set JAVA_HOME")
        os.environ["JAVA_HOME"] = home
    release = Path(os.environ["JAVA_HOME"]) / "release"  # JAVA_VERSION="25.0.3"
    version = release.read_text().split('JAVA_VERSION="', 1)[-1].split(".")[0] if release.exists() else ""
    if version.isdigit() and int(version) < 21:
        raise SystemExit(f"JAVA_HOME={os.environ['JAVA_HOME']} is Java {version}; Anserini's jar needs Java 21 or "
                         f"newer (e.g. {JAVA_HOMES[0]})")
    import jnius_config
    import pyserini

    jars = glob.glob(str(Path(pyserini.__file__).parent / "resources" / "jars" / "anserini-*-fatjar.jar"))
    if not jars:
        raise SystemExit("Pyserini's wheel has no Anserini jar under pyserini/resources/jars")
    jnius_config.add_options("-Xmx4g")
    jnius_config.set_classpath(jars[0])
    import jnius

    return jnius


def lucene_analyzer(jnius, language: str):
    autoclass = jnius.autoclass
    if language == "en":
        return autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    if language in autoclass("io.anserini.analysis.AnalyzerMap").analyzerMap.keySet().toArray():
        return autoclass("io.anserini.analysis.AnalyzerMap").getLanguageSpecificAnalyzer(language)
    if language in LUCENE_ANALYZERS:
        return autoclass(f"org.apache.lucene.analysis.{LUCENE_ANALYZERS[language]}")()
    return autoclass("org.apache.lucene.analysis.standard.StandardAnalyzer")()


def lucene_tokens(jnius, analyzer, text: str) -> list[str]:
    return list(jnius.autoclass("io.anserini.analysis.AnalyzerUtils").analyze(analyzer, text))


def lucene_bm25_run(jnius, analyzer, docs: list[list[str]], queries: list[list[str]], k: int) -> dict:
    """{query id: {docid: score}}: an in-memory Lucene index of ``docs`` (id, text), BM25(k1, b),
    each query Anserini's bag of words."""
    autoclass = jnius.autoclass
    similarity = autoclass("org.apache.lucene.search.similarities.BM25Similarity")(K1, B)
    directory = autoclass("org.apache.lucene.store.ByteBuffersDirectory")()
    config = autoclass("org.apache.lucene.index.IndexWriterConfig")(analyzer)
    config.setSimilarity(similarity)
    writer = autoclass("org.apache.lucene.index.IndexWriter")(directory, config)
    Document, Store = autoclass("org.apache.lucene.document.Document"), autoclass("org.apache.lucene.document.Field$Store")
    TextField, StringField = autoclass("org.apache.lucene.document.TextField"), autoclass("org.apache.lucene.document.StringField")
    for docid, text in docs:
        document = Document()
        document.add(StringField("id", docid, Store.YES))
        document.add(TextField("contents", text, Store.NO))
        writer.addDocument(document)
    writer.close()
    reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
    searcher = autoclass("org.apache.lucene.search.IndexSearcher")(jnius.cast("org.apache.lucene.index.IndexReader", reader))
    searcher.setSimilarity(similarity)
    stored = reader.storedFields()
    Term, TermQuery = autoclass("org.apache.lucene.index.Term"), autoclass("org.apache.lucene.search.TermQuery")
    BoostQuery, Builder = autoclass("org.apache.lucene.search.BoostQuery"), autoclass("org.apache.lucene.search.BooleanQuery$Builder")
    SHOULD = autoclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
    run = {}
    for qid, text in queries:
        counts: dict[str, int] = {}
        for token in lucene_tokens(jnius, analyzer, text):
            counts[token] = counts.get(token, 0) + 1
        if not counts:
            run[qid] = {}
            continue
        builder = Builder()
        for token, count in counts.items():
            query = TermQuery(Term("contents", token))
            builder.add(BoostQuery(query, float(count)) if count > 1 else query, SHOULD)
        hits = searcher.search(builder.build(), k).scoreDocs
        run[qid] = {stored.document(hit.doc).get("id"): float(hit.score) for hit in hits}
    reader.close()
    return run


def lucene_side(request_path: str, answer_path: str) -> None:
    jnius = start_jvm()
    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    answer = {"lucene": jnius.autoclass("org.apache.lucene.util.Version").LATEST.toString()}
    for language, job in request.items():
        analyzer = lucene_analyzer(jnius, language)
        out = {"analyzer": analyzer.getClass().getName().rsplit('.', 1)[-1],
               "samples": [lucene_tokens(jnius, analyzer, s) for s in job.get("samples", [])]}
        for name, data in job.get("collections", {}).items():
            out[name] = lucene_bm25_run(jnius, analyzer, data["docs"], data["queries"], data["k"])
        answer[language] = out
    Path(answer_path).write_text(json.dumps(answer, ensure_ascii=False), encoding="utf-8")


def export_stopwords(folder: Path) -> None:
    """Each Lucene language analyzer's stopword set, one word a line, sorted."""
    jnius = start_jvm()
    languages = sorted({*jnius.autoclass("io.anserini.analysis.AnalyzerMap").analyzerMap.keySet().toArray(),
                        *LUCENE_ANALYZERS, "en"})
    folder.mkdir(parents=True, exist_ok=True)
    for language in languages:
        analyzer = lucene_analyzer(jnius, language)
        # A StopwordAnalyzerBase has its set; Dutch's analyzer keeps it in a static getter; others have none.
        if jnius.find_javaclass("org.apache.lucene.analysis.StopwordAnalyzerBase").isInstance(analyzer):
            stopwords = jnius.cast("org.apache.lucene.analysis.StopwordAnalyzerBase", analyzer).getStopwordSet()
        elif language == "nl":
            stopwords = jnius.autoclass("org.apache.lucene.analysis.nl.DutchAnalyzer").getDefaultStopSet()
        else:
            stopwords = None
        words = []
        if stopwords is not None:
            iterator = stopwords.iterator()
            while iterator.hasNext():
                word = iterator.next()
                words.append(word if isinstance(word, str) else "".join(word))
        if words:
            (folder / f"{language}.txt").write_text("\n".join(sorted(words)) + "\n", encoding="utf-8")
        print(f"{language}: {analyzer.getClass().getName().rsplit('.', 1)[-1]}, {len(words)} stopwords")


# ---------------------------------------------------------------- polyrag's side

def xquad_collection(path: Path) -> dict:
    from polyrag.data.xquad import read_squad, xquad_docid

    docs, queries, qrels = [], [], {}
    for a, article in enumerate(read_squad(path)):
        for p, paragraph in enumerate(article["paragraphs"]):
            docid = xquad_docid(a, p)
            docs.append([docid, paragraph["context"]])
            for qa in paragraph["qas"]:
                queries.append([qa["id"], qa["question"]])
                qrels[qa["id"]] = {docid: 1}
    return {"docs": docs, "queries": queries, "qrels": qrels}


def demo_collection(language: str) -> dict:
    from polyrag.retrieval.corpus import DEMO_DIR, contents, demo_corpus

    corpus = demo_corpus(language)
    docs = [[d, contents(t, x)] for d, t, x in zip(corpus["docid"], corpus["title"], corpus["text"])]
    queries, qrels = [], {}
    for line in (Path(DEMO_DIR) / f"{language}.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        queries.append([record["query_id"], record["query"]])
        qrels[record["query_id"]] = {d: 1 for d in record["relevant_docids"]}
    return {"docs": docs, "queries": queries, "qrels": qrels}


def polyrag_run(language: str, data: dict, k: int, stopwords: bool) -> dict:
    import pandas as pd

    from polyrag.retrieval.bm25 import BM25Index

    corpus = pd.DataFrame({"docid": [d for d, _ in data["docs"]], "title": "", "text": [t for _, t in data["docs"]]})
    index = BM25Index.build(corpus, language, k1=K1, b=B, stopwords=stopwords)
    run = index.search(dict(data["queries"]), k=k)
    out: dict[str, dict[str, float]] = {qid: {} for qid, _ in data["queries"]}
    for row in run.itertuples(index=False):
        out[str(row.query_id)][str(row.docid)] = float(row.score)
    return out


def ndcg10(qrels: dict, run: dict) -> dict[str, float]:
    """nDCG@10 per question (pytrec_eval); a question with nothing retrieved scores 0."""
    import pytrec_eval

    # pytrec_eval leaves out a query whose run is empty: give it a zero-score non-relevant row instead.
    run = {q: (docs or {"__none__": 0.0}) for q, docs in run.items()}
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return {q: scores[q]["ndcg_cut_10"] for q in qrels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lucene-python", default=".venv-lucene/bin/python")
    parser.add_argument("--download-xquad", action="store_true",
                        help="fetch a language missing from --xquad-dir at XQuAD's pinned commit")
    parser.add_argument("--cache-dir", default=".cache/polyrag")
    parser.add_argument("--xquad-dir", default=os.environ.get("POLYRAG_SHARED_DATA", "../shared/data") + "/xquad")
    parser.add_argument("--languages", nargs="*", default=XQUAD_LANGUAGES)
    parser.add_argument("--lucene-side", nargs=2, metavar=("REQUEST", "ANSWER"), help=argparse.SUPPRESS)
    parser.add_argument("--export-stopwords", metavar="FOLDER", nargs="?", const="polyrag/retrieval/stopwords")
    args = parser.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")  # the index builds' progress lines would bury the tables
    if args.lucene_side:
        return lucene_side(*args.lucene_side)
    if args.export_stopwords:
        return export_stopwords(Path(args.export_stopwords))

    from polyrag.retrieval.tokenize import Tokenizer

    try:
        from polyrag.retrieval.tokenize import lucene_stopwords
    except ImportError:  # a polyrag before Lucene's lists (to measure the change)
        lucene_stopwords = lambda language: None  # noqa: E731

    k = 100
    collections: dict[str, dict[str, dict]] = {}
    missing = []
    for language in args.languages:
        path = Path(args.xquad_dir) / f"xquad.{language}.json"
        if not path.exists() and args.download_xquad:
            from polyrag.data.xquad import xquad_file
            from polyrag.errors import PolyragError

            try:
                path = xquad_file(language, None, None, args.cache_dir)
            except PolyragError as error:
                print(f"xquad.{language}.json: {error}", file=sys.stderr)
        if path.exists():
            collections.setdefault(language, {})["xquad"] = xquad_collection(path)
        else:
            missing.append(language)
    for language in DEMO_LANGUAGES:
        collections.setdefault(language, {})["demo"] = demo_collection(language)
    sample_languages = sorted(set(SAMPLES) | set(collections))
    samples = {lang: [SAMPLES[lang]] if lang in SAMPLES else [] for lang in sample_languages}
    for lang, found in collections.items():
        if "xquad" in found:
            samples[lang].append(found["xquad"]["queries"][0][1])
    request = {lang: {"samples": samples[lang],
                      "collections": {name: {"docs": c["docs"], "queries": c["queries"], "k": k}
                                      for name, c in collections.get(lang, {}).items()}}
               for lang in sample_languages}
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "request.json").write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
        subprocess.run([args.lucene_python, __file__, "--lucene-side", f"{tmp}/request.json", f"{tmp}/answer.json"],
                       check=True)
        answer = json.loads(Path(tmp, "answer.json").read_text(encoding="utf-8"))

    print(f"# Tokens: polyrag vs Lucene {answer['lucene']}\n")
    for lang in sample_languages:
        tokenizer = Tokenizer(lang)
        print(f"{lang}  polyrag: {getattr(tokenizer, 'analysis', '')}\n    Lucene: {answer[lang]['analyzer']}")
        for text, theirs in zip(samples[lang], answer[lang]["samples"]):
            print(f"  {text}\n    polyrag: {' '.join(tokenizer(text))}\n    Lucene:  {' '.join(theirs)}")
    print(f"\n# nDCG@10, BM25 k1={K1} b={B}: polyrag (stopwords kept / dropped) vs Lucene\n")
    print("| data | lang | questions | Lucene analyzer | Lucene | polyrag | polyrag, stopwords dropped | "
          "polyrag - Lucene | better / worse |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for name in ("xquad", "demo"):
        for lang in sorted(collections):
            if name not in collections[lang]:
                continue
            data = collections[lang][name]
            theirs = ndcg10(data["qrels"], answer[lang][name])
            ours = ndcg10(data["qrels"], polyrag_run(lang, data, k, stopwords=False))
            dropped = (ndcg10(data["qrels"], polyrag_run(lang, data, k, stopwords=True))
                       if lucene_stopwords(lang) is not None else None)
            mean = lambda scores: sum(scores.values()) / len(scores)  # noqa: E731
            better = sum(ours[q] > theirs[q] + 1e-9 for q in ours)
            worse = sum(ours[q] < theirs[q] - 1e-9 for q in ours)
            print(f"| {name} | {lang} | {len(ours)} | {answer[lang]['analyzer']} | {mean(theirs):.3f} | {mean(ours):.3f} | "
                  f"{f'{mean(dropped):.3f}' if dropped else 'no list'} | {mean(ours) - mean(theirs):+.3f} | "
                  f"{better} / {worse} |")
    if missing:
        print(f"\nXQuAD not measured (no xquad.{{lang}}.json in {args.xquad_dir}"
              f"{'' if args.download_xquad else '; --download-xquad fetches it'}): {', '.join(missing)}")


if __name__ == "__main__":
    main()
