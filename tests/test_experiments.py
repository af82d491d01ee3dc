"""Tests of gpc_literate.experiments (chapter 18): CLI, results file, summaries, Friedman/Nemenyi."""

import json
import multiprocessing
import os
import random
import subprocess
import sys
import time

import numpy as np
import pytest

import gpc_literate
from gpc_literate import experiments

TINY = [
    "ida",
    "--datasets",
    "thyroid",
    "--realisations",
    "1",
    "--max-iter",
    "2",
    "--max-sweeps",
    "20",
    "--no-progress",
]


def test_cli_writes_results_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "res" / "ida.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "gpc_literate.experiments", *TINY, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
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
    records = [
        {
            "dataset": "a",
            "realisation": i,
            "method": m,
            "status": "ok",
            "time": 1.0,
            "nlp": v,
            "error": v / 2,
            "f_measure": 1 - v,
        }
        for i, (m, v) in enumerate([("x", 0.1), ("x", 0.3), ("y", 0.5)])
    ]
    records.append(
        {
            "dataset": "a",
            "realisation": 9,
            "method": "y",
            "status": "failed",
            "time": 0.1,
        }
    )
    s = experiments.summarise(records)
    assert s["a"]["x"]["nlp"]["mean"] == pytest.approx(0.2)
    assert s["a"]["x"]["nlp"]["std"] == pytest.approx(np.std([0.1, 0.3], ddof=1))
    assert s["a"]["x"]["nlp"]["se"] == pytest.approx(
        np.std([0.1, 0.3], ddof=1) / np.sqrt(2)
    )
    assert s["a"]["x"]["error"]["mean"] == pytest.approx(0.1)
    assert s["a"]["y"]["nlp"]["n"] == 1 and np.isnan(s["a"]["y"]["nlp"]["se"])
    assert s["a"]["y"]["n_failed"] == 1
    assert experiments.mean_table(s, "nlp") == {
        "a": {"x": pytest.approx(0.2), "y": pytest.approx(0.5)}
    }


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
    assert res["critical_difference"] == pytest.approx(
        2.343 * np.sqrt(12 / 60), abs=1e-3
    )
    sig = res["significant"]
    assert sig[0, 2] and not sig[0, 1] and not sig[1, 2]
    # higher_is_better reverses the ranks; an array input with names works the same
    res2 = experiments.friedman_nemenyi(
        np.array([[v["A"], v["B"], v["C"]] for v in table.values()]),
        ["A", "B", "C"],
        higher_is_better=True,
    )
    np.testing.assert_allclose(res2["average_ranks"], [3.0, 2.0, 1.0])
    with pytest.raises(ValueError):
        experiments.friedman_nemenyi(np.ones((5, 2)))


def test_import_is_light():
    # joblib is no longer checked: scikit-learn, on which gpc_literate.base builds, imports it
    code = (
        "import sys, gpc_literate; print('joblib' in sys.modules); "
        "import gpc_literate.experiments; print('matplotlib' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split() == ["False", "False"], out.stderr


# --- the results file: concurrent writers, provenance, resume checks, bad input -----------


def _fake_record(dataset, realisation, method, status="ok"):
    return {
        "dataset": dataset,
        "realisation": realisation,
        "method": method,
        "status": status,
        "nlp": 0.5,
        "error": 0.25,
        "f_measure": 0.5,
        "time": 0.001,
    }


def _quick_job(dataset, realisation, method, config):
    """A stand-in for run_one: returns at once, after a short random pause."""
    time.sleep(random.random() * 0.004)
    return _fake_record(dataset, realisation, method)


def _child_main(args):
    """Run the CLI in a forked process with the stand-in job; exit with its status."""
    experiments.run_one = _quick_job
    sys.exit(experiments.main(args))


FAST = ["--realisations", "10", "--no-progress"]


def test_two_concurrent_cli_runs_keep_every_record(tmp_path):
    out = str(tmp_path / "shared.json")
    ctx = multiprocessing.get_context("fork")
    runs = [
        ctx.Process(
            target=_child_main,
            args=(["ida", "--datasets", *names, *FAST, "--out", out],),
        )
        for names in (["thyroid", "heart"], ["heart", "titanic"])
    ]
    for p in runs:
        p.start()
    for p in runs:
        p.join(120)
    assert [p.exitcode for p in runs] == [0, 0]
    records = experiments.load_results(out, "ida")
    expected = {
        (n, i, m)
        for n in ("thyroid", "heart", "titanic")
        for i in range(10)
        for m in experiments.METHODS["ida"]
    }
    keys = [experiments._key(r) for r in records]
    assert len(keys) == len(set(keys)) == len(expected) == 90
    assert set(keys) == expected
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp_")]


def test_records_carry_config_version_and_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(experiments, "run_one", _quick_job)
    out = tmp_path / "r.json"
    assert (
        experiments.main(
            [
                "ida",
                "--datasets",
                "heart",
                "--realisations",
                "2",
                "--max-iter",
                "7",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    records = json.loads(out.read_text())["records"]
    assert len(records) == 6
    config = dict(experiments.DEFAULT_CONFIG, max_iter=7)
    try:
        head = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                cwd=os.path.dirname(experiments.__file__),
            ).stdout.strip()
            or None
        )
    except OSError:
        head = None
    for r in records:
        assert r["config"] == config
        assert r["version"] == gpc_literate.__version__
        assert r["commit"] == head
    # without git the commit is None, and nothing fails
    monkeypatch.setenv("PATH", str(tmp_path))
    assert experiments._git_commit() is None
    again = experiments.run_experiment(
        "ida", ["heart"], 3, out=str(out), progress=False, config={"max_iter": 7}
    )
    assert len(again) == 9 and again[-1]["commit"] is None


def test_resume_with_another_configuration_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(experiments, "run_one", _quick_job)
    out = tmp_path / "r.json"
    args = ["ida", "--datasets", "heart", "--realisations", "1", "--no-progress"]
    assert experiments.main([*args, "--max-iter", "2", "--out", str(out)]) == 0
    before = out.read_text()
    capsys.readouterr()
    assert (
        experiments.main(
            [
                *args,
                "--realisations",
                "2",
                "--max-iter",
                "3",
                "--damping",
                "0.5",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "another configuration" in err and "['damping', 'max_iter']" in err
    assert "Traceback" not in err
    with pytest.raises(ValueError, match=r"differs in \['max_iter'\]"):
        experiments.run_experiment(
            "ida", ["heart"], 2, out=str(out), progress=False, config={"max_iter": 3}
        )
    assert out.read_text() == before  # the file is untouched
    # the same settings resume; a new output file takes the new settings
    assert (
        experiments.main(
            [*args, "--realisations", "2", "--max-iter", "2", "--out", str(out)]
        )
        == 0
    )
    assert len(experiments.load_results(out)) == 6
    assert (
        experiments.main([*args, "--max-iter", "3", "--out", str(tmp_path / "b.json")])
        == 0
    )


def test_retry_failed_reruns_exactly_the_failed_jobs(tmp_path, monkeypatch):
    out = str(tmp_path / "r.json")
    failing = {("heart", 1, "EP(ML)"), ("heart", 2, "LS-CV(NLP)")}
    calls = []

    def flaky(dataset, realisation, method, config):
        calls.append((dataset, realisation, method))
        key = (dataset, realisation, method)
        return _fake_record(*key, status="failed" if key in failing else "ok")

    monkeypatch.setattr(experiments, "run_one", flaky)
    args = [
        "ida",
        "--datasets",
        "heart",
        "--realisations",
        "3",
        "--no-progress",
        "--out",
        out,
    ]
    assert experiments.main(args) == 0
    assert len(calls) == 9
    statuses = {experiments._key(r): r["status"] for r in experiments.load_results(out)}
    assert {k for k, s in statuses.items() if s == "failed"} == failing
    calls.clear()
    assert experiments.main(args) == 0  # a plain resume skips failed jobs
    assert calls == []
    failing.clear()
    assert experiments.main([*args, "--retry-failed"]) == 0
    assert sorted(calls) == [("heart", 1, "EP(ML)"), ("heart", 2, "LS-CV(NLP)")]
    records = experiments.load_results(out)
    assert len(records) == 9 and all(r["status"] == "ok" for r in records)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ida", "--datasets", "nope"], "unknown data set 'nope'; available: banana"),
        (
            ["ida", "--datasets", "heart", "--realisations", "0"],
            "realisations must be at least 1",
        ),
        (["ida", "--realisations", "two"], "realisations must be an integer"),
        (["ida", "--jobs", "0"], "--jobs"),
        (["ida", "--jobs", "-3"], "--jobs"),
        (["ida", "--methods", "NOPE"], "invalid choice: 'NOPE' (choose from 'EP(ML)'"),
        (["ida", "--max-iter", "0"], "max-iter must be at least 1"),
        (["ida", "--max-sweeps", "-1"], "max-sweeps must be at least 1"),
        (["ida", "--damping", "0"], "damping must be a number in (0, 1]"),
        (["ida", "--damping", "nan"], "damping must be a number in (0, 1]"),
        (["svm"], "invalid choice: 'svm'"),
        (["ida", "--out", "."], "is a directory"),
    ],
)
def test_every_bad_argument_is_refused_with_a_message(
    argv, message, monkeypatch, capsys
):
    monkeypatch.setattr(experiments, "run_one", _quick_job)
    with pytest.raises(SystemExit) as exc:
        experiments.main([*argv, "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _malformed_files(tmp_path):
    good = {
        "kind": "ida",
        "config": experiments.DEFAULT_CONFIG,
        "records": [_fake_record("heart", 0, "EP(ML)")],
    }
    text = json.dumps(good, indent=1)
    files = {
        "truncated": (text[: len(text) // 2], "not valid JSON, perhaps truncated"),
        "empty": ("", "not valid JSON"),
        "a list": ("[1, 2, 3]", "is not a results file of gpc_literate"),
        "another program's JSON": (
            '{"name": "x", "values": [1]}',
            "is not a results file of gpc_literate",
        ),
        "records without keys": (
            '{"kind": "ida", "config": {}, "records": [{"a": 1}]}',
            "is not a results file of gpc_literate",
        ),
        "another experiment": (
            json.dumps(dict(good, kind="imbalanced")),
            "holds results of the 'imbalanced' experiment",
        ),
        "binary": (None, "not valid JSON"),
    }
    for name, (content, message) in files.items():
        path = tmp_path / (name.replace(" ", "_").replace("'", "") + ".json")
        if content is None:
            path.write_bytes(bytes(range(256)))
        else:
            path.write_text(content)
        yield name, path, message


def test_malformed_results_files_give_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(experiments, "run_one", _quick_job)
    for name, path, message in _malformed_files(tmp_path):
        before = path.read_bytes()
        status = experiments.main(
            [
                "ida",
                "--datasets",
                "heart",
                "--realisations",
                "1",
                "--no-progress",
                "--out",
                str(path),
            ]
        )
        err = capsys.readouterr().err
        assert status == 2, name
        assert message in err and str(path) in err and "Traceback" not in err, (
            name,
            err,
        )
        assert path.read_bytes() == before, name  # never overwritten
        with pytest.raises(ValueError, match="results"):
            experiments.load_results(path, "ida")


def test_cli_errors_are_messages_not_tracebacks(tmp_path):
    bad = tmp_path / "truncated.json"
    bad.write_text('{"kind": "ida", "config": {"max_it')
    for args in (
        ["ida", "--datasets", "nope"],
        ["ida", "--jobs", "0"],
        ["ida", "--datasets", "heart", "--realisations", "1", "--out", str(bad)],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "gpc_literate.experiments", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, (args, proc.stderr)
        assert "error:" in proc.stderr and "Traceback" not in proc.stderr


def test_results_files_written_before_provenance_are_read_and_resumed(
    tmp_path, monkeypatch
):
    root = os.path.dirname(os.path.dirname(os.path.abspath(experiments.__file__)))
    for kind in ("ida", "imbalanced"):
        records = experiments.load_results(
            os.path.join(root, "results", f"{kind}.json"), kind
        )
        assert records and "config" not in records[0]
        # version and commit were stamped afterwards from git history, as the file's note says
        assert all(r["version"] == "0.1.0" and len(r["commit"]) == 40 for r in records)
    old = json.load(open(os.path.join(root, "results", "ida.json")))
    assert "history" in old["note"]
    old["records"] = [
        r for r in old["records"] if r["dataset"] == "heart" and r["realisation"] < 2
    ]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    monkeypatch.setattr(experiments, "run_one", _quick_job)
    records = experiments.run_experiment(
        "ida", ["heart"], 3, out=str(path), progress=False
    )
    assert len(records) == 9
    assert records[:6] == old["records"]  # old records kept as they were
    assert all(r["config"] == old["config"] for r in records[6:])
    assert (
        json.loads(path.read_text())["note"] == old["note"]
    )  # the header survives merges
    with pytest.raises(ValueError, match="max_iter"):
        experiments.run_experiment(
            "ida", ["heart"], 4, out=str(path), progress=False, config={"max_iter": 5}
        )


def test_results_file_checks(tmp_path):
    command = "python -m gpc_literate.experiments ida --out results/ida.json"
    with pytest.raises(FileNotFoundError, match="gpc_literate.experiments ida"):
        experiments.read_results_file(tmp_path / "missing.json", command)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(experiments.ResultsFileError, match="remake it"):
        experiments.read_results_file(bad, command)
    rows = experiments.compare_recomputed(
        [
            ("r", "nlp", 0.5, 0.5 + 1e-7, 1e-6),
            ("r", "error", 0.25, 0.25, 0),
            ("r", "count", 3, 4, 0),
            ("r", "errors", {"a": 1}, {"a": 1}, 0),
            ("r", "nan", float("nan"), float("nan"), 0),
            ("r", "inf", 1.0, float("inf"), 1.0),
        ]
    )
    assert [c["agrees"] for c in rows] == [True, True, False, True, True, False]
    assert rows[2]["difference"] == 1.0 and rows[3]["difference"] is None
    table = experiments.recomputed_markdown(
        rows + experiments.compare_recomputed([("r|s", "max |dp|", 0.0, 1e-3, 2.0)]),
        "caption",
    )
    assert "| r\\|s | max \\|dp\\| | 0 | 0.001 | +1.0e-03 | 2 | yes |" in table
    assert (
        table.count("\n| r |") == 6 and "**no**" in table and table.endswith("caption")
    )
    experiments.check_recomputed(rows[:2], bad, command)
    with pytest.raises(experiments.StaleResultsError) as info:
        experiments.check_recomputed(rows, bad, command)
    message = str(info.value)
    assert str(bad) in message and command in message and "count" in message
    assert isinstance(info.value, AssertionError)
    with pytest.raises(ValueError):
        experiments.compare_recomputed([("r", "x", 1.0, 1.0, -1.0)])
