"""The run format: ranks from scores with ties by docid, TREC and Parquet round trips, bad runs refused."""

from __future__ import annotations

import pandas as pd
import pytest

from polyrag.errors import ConfigError, DataError
from polyrag.retrieval.retrievers import RERANKERS, RETRIEVERS
from polyrag.retrieval.runs import make_run, read_run, read_trec, write_run, write_trec


def sample_run():
    return make_run(["q2", "q10", "q2", "q2", "q10"], ["080", "b", "80", "a", "c"], [1.5, 2.0, 3.25, 1.5, 0.1],
                    first_stage_rank=[1, 2, 3, 4, 5])


def test_ranks_follow_scores_and_equal_scores_rank_by_docid():
    run = sample_run()
    assert list(run["query_id"]) == ["q10", "q10", "q2", "q2", "q2"]  # ids sort as strings
    assert list(run["docid"]) == ["b", "c", "80", "080", "a"]  # 080 and a tie at 1.5: "080" < "a"
    assert list(run["rank"]) == [1, 2, 1, 2, 3]
    assert list(run["first_stage_rank"]) == [2, 5, 3, 1, 4]  # extra columns follow their rows


def test_trec_and_parquet_round_trips_keep_ids_as_strings(tmp_path):
    run = sample_run()
    write_trec(run, tmp_path / "run.trec", "bm25")
    lines = (tmp_path / "run.trec").read_text().splitlines()
    assert lines[2] == "q2 Q0 80 1 3.25 bm25"
    back = read_trec(tmp_path / "run.trec")
    pd.testing.assert_frame_equal(back, run[["query_id", "docid", "rank", "score"]], check_dtype=False)
    assert back["docid"].tolist()[3] == "080"
    write_run(run, tmp_path / "run.parquet")
    pd.testing.assert_frame_equal(read_run(tmp_path / "run.parquet"), run, check_dtype=False)


@pytest.mark.parametrize("lines, says", [
    (["q1 Q0 d1 1 2.0 t", "q1 Q0 d1 2 1.0 t"], "line 2 (query 'q1', docid 'd1'): docid retrieved twice for this query (first at line 1)"),
    (["q1 Q0 d1 1 2.0 t", "q1 Q0 d2 1.5 1.0 t"], "line 2 (query 'q1', docid 'd2'): rank '1.5' is not a whole number"),
    (["q1 Q0 d1 0 2.0 t"], "line 1 (query 'q1', docid 'd1'): rank '0' is not a whole number of at least 1"),
    (["q1 Q0 d1 1 2.0 t", "q1 Q0 d2 1 1.0 t"], "line 2 (query 'q1', docid 'd2'): rank 1 repeats line 1"),
    (["q1 Q0 d1 1 high t"], "line 1 (query 'q1', docid 'd1'): score 'high' is not a finite number"),
    (["q1 Q0 d1 1 2.0"], "line 1: 5 fields"),
])
def test_a_bad_trec_run_is_refused_with_its_file_and_line(tmp_path, lines, says):
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as error:
        read_trec(path)
    assert str(error.value).startswith(f"{path}: ") and says in str(error.value)


def test_a_bad_parquet_run_is_refused_with_its_row(tmp_path):
    path = tmp_path / "run.parquet"
    pd.DataFrame({"query_id": ["q", "q"], "docid": ["a", "a"], "rank": [1, 2], "score": [1.0, 0.5]}).to_parquet(path)
    with pytest.raises(DataError, match=r"run\.parquet: 1 bad row in the run: row 2 .*retrieved twice"):
        read_run(path)
    pd.DataFrame({"query_id": ["q"], "docid": [80], "rank": [1], "score": [1.0]}).to_parquet(path)
    with pytest.raises(DataError, match="column docid holds int64 values; ids must be strings"):
        read_run(path)


def test_unknown_kinds_are_refused_with_the_known_ones():
    assert RETRIEVERS["bm25"].load().__name__ == "BM25Index"
    assert RETRIEVERS["dense"].load().__name__ == "DenseIndex"
    assert RERANKERS["cross_encoder"].load().__name__ == "CrossEncoderReranker"
    assert set(RETRIEVERS["dense"].resources) == {"threads", "mem_mb", "gpu", "runtime"}
    with pytest.raises(ConfigError, match=r"unknown retriever kind 'splade' \(known: bm25, dense\)"):
        RETRIEVERS["splade"]
    with pytest.raises(ConfigError, match=r"unknown reranker kind 'colbert' \(known: cross_encoder\)"):
        RERANKERS["colbert"]
