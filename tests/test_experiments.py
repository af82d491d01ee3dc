"""Tests of gpc_literate.experiments (chapter 14): CLI, resume, summaries, Friedman/Nemenyi."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gpc_literate import experiments

TINY = ["ida", "--datasets", "thyroid", "--realisations", "1", "--max-iter", "2",
        "--max-sweeps", "20", "--no-progress"]


def test_cli_writes_results_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "res" / "ida.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "gpc_literate.experiments", *TINY,
                           "--out", str(out)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["kind"] == "ida"
    records = data["records"]
    assert sorted(r["method"] for r in records) == sorted(experiments.METHODS["ida"])
    for r in records:
        assert r["status"] == "ok", r
        assert r["dataset"] == "thyroid" and r["realisation"] == 0
        assert 0.0 <= r["error"] <= 1.0 and np.isfinite(r["nlp"]) and r["time"] > 0
        assert 0.0 <= r["f_measure"] <= 1.0 and len(r["theta"]) == 2
    assert "thyroid" in proc.stdout
    assert not [f for f in os.listdir(out.parent) if f.startswith(".tmp_")]

    # rerun: every job is in the file, so nothing is run and the file is not rewritten
    def forbidden(*args, **kwargs):
        raise AssertionError("a finished job was run again")

    monkeypatch.setattr(experiments, "run_one", forbidden)
    mtime = out.stat().st_mtime_ns
    assert experiments.main([*TINY, "--out", str(out)]) == 0
    assert out.stat().st_mtime_ns == mtime
    assert json.loads(out.read_text())["records"] == records


def test_summarise_mean_and_standard_error():
    records = [{"dataset": "a", "realisation": i, "method": m, "status": "ok", "time": 1.0,
                "nlp": v, "error": v / 2, "f_measure": 1 - v}
               for i, (m, v) in enumerate([("x", 0.1), ("x", 0.3), ("y", 0.5)])]
    records.append({"dataset": "a", "realisation": 9, "method": "y", "status": "failed",
                    "time": 0.1})
    s = experiments.summarise(records)
    assert s["a"]["x"]["nlp"]["mean"] == pytest.approx(0.2)
    assert s["a"]["x"]["nlp"]["std"] == pytest.approx(np.std([0.1, 0.3], ddof=1))
    assert s["a"]["x"]["nlp"]["se"] == pytest.approx(np.std([0.1, 0.3], ddof=1) / np.sqrt(2))
    assert s["a"]["x"]["error"]["mean"] == pytest.approx(0.1)
    assert s["a"]["y"]["nlp"]["n"] == 1 and np.isnan(s["a"]["y"]["nlp"]["se"])
    assert s["a"]["y"]["n_failed"] == 1
    assert experiments.mean_table(s, "nlp") == {"a": {"x": pytest.approx(0.2),
                                                      "y": pytest.approx(0.5)}}


def test_friedman_nemenyi_known_ranks():
    # 10 data sets, method A always best, B second, C worst (lower is better)
    table = {f"d{i}": {"A": 0.1 + i, "B": 0.2 + i, "C": 0.3 + i} for i in range(10)}
    res = experiments.friedman_nemenyi(table)
    assert res["methods"] == ["A", "B", "C"]
    np.testing.assert_allclose(res["average_ranks"], [1.0, 2.0, 3.0])
    # chi2_F = 12 N / (k (k+1)) [sum R^2 - k (k+1)^2 / 4] = 10 * (14 - 12) = 20
    assert res["chi2"] == pytest.approx(20.0)
    assert res["iman_davenport"] == float("inf") or res["p_value_iman_davenport"] < 1e-6
    assert res["q_alpha"] == pytest.approx(2.343, abs=1e-3)
    assert res["critical_difference"] == pytest.approx(2.343 * np.sqrt(12 / 60), abs=1e-3)
    sig = res["significant"]
    assert sig[0, 2] and not sig[0, 1] and not sig[1, 2]
    # higher_is_better reverses the ranks; an array input with names works the same
    res2 = experiments.friedman_nemenyi(np.array([[v["A"], v["B"], v["C"]]
                                                  for v in table.values()]),
                                        ["A", "B", "C"], higher_is_better=True)
    np.testing.assert_allclose(res2["average_ranks"], [3.0, 2.0, 1.0])
    with pytest.raises(ValueError):
        experiments.friedman_nemenyi(np.ones((5, 2)))


def test_import_is_light():
    code = ("import sys, gpc_literate, gpc_literate.experiments; "
            "print('joblib' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr
