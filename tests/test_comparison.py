"""Tests of gpc_literate.comparison (chapter 21): Seeger's Table 1, baselines, runner, CLI."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from gpc_literate import comparison as cmp
from gpc_literate.datasets import make_noisy_linear
from gpc_literate.kernels import RBF
from gpc_literate.svm import KernelAdatron, kernel_adatron


def _toy(n=40, d=3, seed=0):
    return make_noisy_linear(n, d, 0.5, seed)  # chapter 4's toy problem


def test_paper_table_has_every_cell_and_ambiguous_pairs_swap():
    assert set(cmp.PAPER_TABLE1) == set(cmp.DATASETS)
    for name, row in cmp.PAPER_TABLE1.items():
        assert tuple(row) == cmp.METHODS
        assert all(0 <= v < cmp.PAPER_TEST_SIZE[name] for v in row.values())
    assert [m for ms in cmp.FITTERS.values() for m in ms] == list(cmp.METHODS)
    # each ambiguous cell's alternative is the value of its partner cell, and vice versa
    for (name, method), alt in cmp.AMBIGUOUS.items():
        partners = [
            m
            for (n, m), a in cmp.AMBIGUOUS.items()
            if n == name and m != method and a == cmp.PAPER_TABLE1[name][method]
        ]
        assert len(partners) == 1 and cmp.PAPER_TABLE1[name][partners[0]] == alt


def test_least_squares_discriminant_solves_the_normal_equations():
    X, y = _toy(50, 4)
    model = cmp.LeastSquaresDiscriminant().fit(X, y)
    design = np.hstack([X, np.ones((50, 1))])
    beta = np.linalg.solve(design.T @ design, design.T @ y)
    np.testing.assert_allclose(
        np.append(model.coef_, model.intercept_), beta, atol=1e-10
    )
    assert set(np.unique(model.predict(X))) <= {-1, 1}
    np.testing.assert_allclose(model.decision_function(X), design @ beta, atol=1e-10)
    assert not hasattr(model, "predict_proba")
    with pytest.raises(AttributeError):
        model.predict_proba(X)
    with pytest.raises(ValueError):
        cmp.LeastSquaresDiscriminant().fit(X, np.ones(50))  # one class


def test_accelerated_dual_reaches_the_adatron_solution():
    X, y = _toy(40, 3, seed=1)
    K = RBF(length_scale=2.0)(X)
    yf = y.astype(float)
    fast = cmp.svm_dual_accelerated(K, yf, C=5.0, tol=1e-6)
    slow = kernel_adatron(K, yf, C=5.0, fit_bias=True, tol=1e-6, max_iter=500_000)
    assert fast.converged and slow.converged
    # both stop at KKT tolerance 1e-6 on a kernel with condition number ~4e7: the decision
    # values are fixed to a few tol x ||K||, alpha only to tol x cond of the free block
    h_fast = K @ (yf * fast.alpha) + fast.bias
    h_slow = K @ (yf * slow.alpha) + slow.bias
    np.testing.assert_allclose(h_fast, h_slow, rtol=0, atol=1e-4)
    np.testing.assert_allclose(fast.alpha, slow.alpha, rtol=0, atol=1e-3)
    assert fast.bias == pytest.approx(slow.bias, abs=1e-4)
    assert (
        abs(yf @ fast.alpha) < 1e-8
        and fast.alpha.min() >= 0
        and fast.alpha.max() <= 5.0
    )
    with pytest.raises(ValueError, match="C must be"):
        cmp.svm_dual_accelerated(K, yf, C=0.0)
    with pytest.raises(ValueError, match="shape"):
        cmp.svm_dual_accelerated(K[:5], yf, C=1.0)


def test_select_svm_cv_takes_a_grid_minimum():
    X, y = _toy(60, 2, seed=2)
    model, res = cmp.select_svm_cv(X, y, scales=(0.25, 1.0), Cs=(1.0, 0.1), n_folds=5)
    assert isinstance(model, KernelAdatron) and model.fit_bias and model.converged_
    assert res.cv_errors.shape == (2, 2) and res.Cs == (0.1, 1.0)
    i = res.scales.index(res.scale)
    assert res.length_scale == pytest.approx(np.sqrt(2 * res.scale))
    assert res.cv_errors[i, res.Cs.index(res.C)] == res.cv_errors.min()
    assert res.cv_errors.max() <= 60
    with pytest.raises(ValueError, match="n_folds"):
        cmp.select_svm_cv(X, y, n_folds=1)
    with pytest.raises(ValueError, match="Cs"):
        cmp.select_svm_cv(X, y, Cs=())
    with pytest.raises(ValueError, match="scales"):
        cmp.select_svm_cv(X, y, scales=(-1.0,))


def test_start_kernel_and_load_split():
    k = cmp.start_kernel(5)
    np.testing.assert_allclose(k.length_scale, np.sqrt(5.0))
    assert k.variance == 1.0 and k.bias == 0.1
    d = cmp.load_split("crabs", 3)
    assert (d.n_train, d.n_test) == (80, 120) and d.realisation == 3
    whole, _ = d.whole()
    np.testing.assert_allclose(whole.mean(axis=0), 0.0, atol=1e-12)  # whole-set scaling
    np.testing.assert_allclose(whole.std(axis=0, ddof=1), 1.0)
    with pytest.raises(ValueError, match="out of range"):
        cmp.load_split("crabs", 10)


def test_run_one_linear_record():
    r = cmp.run_one("crabs", 0, "Linear")
    assert r["status"] == "ok" and r["fitter"] == "Linear" and r["split"] == 0
    assert (
        set(r["errors"]) == {"Linear"}
        and 0 <= r["errors"]["Linear"] <= r["n_test"] == 120
    )
    assert len(r["coef"]) == 5 and r["time"] >= 0
    json.dumps(r)


def test_bad_input_is_refused_with_clear_errors():
    with pytest.raises(ValueError, match="unknown data set 'iris'"):
        cmp.run_one("iris", 0, "Linear")
    with pytest.raises(ValueError, match="unknown fitter 'GP'"):
        cmp.run_one("crabs", 0, "GP")
    with pytest.raises(ValueError, match="splits must be at least 1"):
        cmp.run_comparison(["crabs"], 0, ["Linear"], progress=False)
    with pytest.raises(ValueError, match="'crabs' has 10 random splits"):
        cmp.run_comparison(["crabs"], 11, ["Linear"], progress=False)
    with pytest.raises(TypeError, match="splits"):
        cmp.run_comparison(["crabs"], "ten", ["Linear"], progress=False)
    with pytest.raises(TypeError, match="splits"):
        cmp.run_comparison(["crabs"], 2.5, ["Linear"], progress=False)
    with pytest.raises(ValueError, match="unknown data set"):
        cmp.run_comparison(["crabs", "sonar"], 1, ["Linear"], progress=False)
    with pytest.raises(ValueError, match="jobs"):
        cmp.run_comparison(["crabs"], 1, ["Linear"], jobs=0, progress=False)
    with pytest.raises(ValueError, match="unknown config keys"):
        cmp.run_comparison(["crabs"], 1, ["Linear"], config={"C": 1}, progress=False)
    with pytest.raises(ValueError, match="at least two"):
        cmp.prediction_interval([3.0])
    with pytest.raises(ValueError, match="ARD fitters"):
        cmp.relevance_summary([], "crabs", "Linear")
    with pytest.raises(ValueError, match="no successful"):
        cmp.relevance_summary([], "crabs", "VarGP")


def test_summaries_and_the_comparison_rule():
    recs = [
        {
            "dataset": "waveform",
            "split": i,
            "fitter": "Linear",
            "status": "ok",
            "errors": {"Linear": e},
            "n_test": 4200,
            "time": 1.0,
        }
        for i, e in enumerate([350, 370, 360, 380])
    ]
    recs.append(
        {
            "dataset": "waveform",
            "split": 9,
            "fitter": "Linear",
            "status": "failed",
            "time": 0.1,
        }
    )
    recs += [
        {
            "dataset": "crabs",
            "split": i,
            "fitter": "VarGP",
            "status": "ok",
            "errors": {"VarGP-mode": 3 + i, "VarGP-mean": 4},
            "n_test": 120,
            "time": 2.0,
        }
        for i in range(3)
    ]
    s = cmp.summarise_counts(recs)
    assert list(s) == ["crabs", "waveform"] and list(s["crabs"]) == [
        "VarGP-mode",
        "VarGP-mean",
    ]
    e = s["waveform"]["Linear"]
    assert e["n"] == 4 and e["n_failed"] == 1 and e["mean"] == pytest.approx(365.0)
    assert e["std"] == pytest.approx(np.std([350, 370, 360, 380], ddof=1))
    assert (e["min"], e["max"]) == (350, 380)
    np.testing.assert_allclose(
        e["scaled"], np.array([350, 370, 360, 380]) * 2504 / 4200
    )
    lo, hi = cmp.prediction_interval(e["scaled"])
    half = stats.t.ppf(0.975, 3) * np.std(e["scaled"], ddof=1) * np.sqrt(1.25)
    assert (lo, hi) == pytest.approx(
        (np.mean(e["scaled"]) - half - 0.5, np.mean(e["scaled"]) + half + 0.5)
    )
    assert cmp.prediction_interval([4, 4, 4]) == pytest.approx((3.5, 4.5))
    rows = {(r["dataset"], r["method"]): r for r in cmp.compare_with_paper(s)}
    assert rows[("waveform", "Linear")]["paper"] == 220
    assert rows[("waveform", "Linear")]["consistent"] == (lo <= 220 <= hi)
    assert rows[("crabs", "VarGP-mean")]["consistent"]  # always 4, paper 4
    # informative: the interval excludes half and twice the paper's count
    assert rows[("crabs", "VarGP-mean")]["informative"]  # [3.5, 4.5] vs 2 and 8
    mode = rows[("crabs", "VarGP-mode")]  # 3, 4, 5 against paper 3
    assert mode["consistent"] and not mode["informative"] and mode["high"] > 6
    assert rows[("crabs", "VarGP-mode")]["alternative"] is None


def test_relevance_summary_counts_switched_off_inputs():
    recs = [
        {
            "dataset": "crabs",
            "split": i,
            "fitter": "VarSVM",
            "status": "ok",
            "relevances": [1e-5, 2.0, 1.0, 1e-3, 0.5],
        }
        for i in (1, 0)
    ]
    rel, n_off = cmp.relevance_summary(recs, "crabs", "VarSVM", threshold=0.01)
    np.testing.assert_allclose(rel[0], [5e-6, 1.0, 0.5, 5e-4, 0.25])
    assert n_off.tolist() == [2, 2]


def test_cli_writes_resumes_and_refuses_bad_arguments(tmp_path, monkeypatch):
    out = tmp_path / "res" / "t1.json"
    args = [
        "--datasets",
        "crabs",
        "--splits",
        "2",
        "--fitters",
        "Linear",
        "--no-progress",
        "--out",
        str(out),
    ]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "gpc_literate.comparison", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["kind"] == "seeger_table1" and data["config"] == cmp.DEFAULT_CONFIG
    assert sorted(r["split"] for r in data["records"]) == [0, 1]
    assert "crabs" in proc.stdout and "Linear" in proc.stdout
    assert not [f for f in os.listdir(out.parent) if f.startswith(".tmp_")]

    def forbidden(*a, **k):
        raise AssertionError("a finished job was run again")

    monkeypatch.setattr(cmp, "run_one", forbidden)
    mtime = out.stat().st_mtime_ns
    assert cmp.main(args) == 0
    assert out.stat().st_mtime_ns == mtime
    with pytest.raises(SystemExit):
        cmp.main(["--datasets", "iris", "--out", str(out)])
    with pytest.raises(SystemExit):
        cmp.main(["--datasets", "crabs", "--splits", "0", "--out", str(out)])


@pytest.mark.parametrize("fitter", ["VarGP", "VarSVM"])
def test_run_one_variational_record(fitter):
    # a few outer and inner iterations only: the record's shape, not its quality
    config = {"var_max_iter": 2, "inner_max_iter": 30}
    r = cmp.run_one("crabs", 1, fitter, config=config)
    assert r["status"] == "ok", r
    assert set(r["errors"]) == set(cmp.FITTERS[fitter])
    assert all(0 <= e <= 120 for e in r["errors"].values())
    assert len(r["relevances"]) == 5 and all(w > 0 for w in r["relevances"])
    assert len(r["theta"]) == 7  # 5 length scales, C, C v
    assert np.isfinite(r["free_energy"]) and r["n_warnings"] >= 0
    json.dumps(r)


def test_run_one_laplace_uses_the_start_kernel_and_bounds():
    r = cmp.run_one("crabs", 2, "Laplace", config={"laplace_max_iter": 3})
    assert r["status"] == "ok" and len(r["theta"]) == 7
    assert all(-8.0 <= t <= 8.0 for t in r["theta"])


# --- the results file, shared with chapter 18: concurrent runs, resume checks, bad input ------


def _fake(dataset, split, fitter, status="ok"):
    return {
        "dataset": dataset,
        "split": split,
        "fitter": fitter,
        "status": status,
        "errors": {m: 1 for m in cmp.FITTERS[fitter]},
        "n_test": 100,
        "time": 0.001,
    }


def test_two_concurrent_cli_runs_keep_every_record(tmp_path):
    # two real command lines started together on one file, each with 30 jobs of its own
    out = tmp_path / "shared.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpc_literate.comparison",
                "--datasets",
                *names,
                "--splits",
                "10",
                "--fitters",
                "Linear",
                "--no-progress",
                "--out",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for names in (["crabs", "pima", "wdbc"], ["twonorm", "ringnorm", "waveform"])
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outputs]
    records = cmp.load_results(out, "seeger_table1")
    keys = [cmp._key(r) for r in records]
    expected = {(n, i, "Linear") for n in cmp.DATASETS for i in range(10)}
    assert len(keys) == len(set(keys)) == 60 and set(keys) == expected
    assert all(
        r["status"] == "ok" and r["config"] == cmp.DEFAULT_CONFIG for r in records
    )
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp_")]


def test_records_carry_config_version_and_commit(tmp_path, monkeypatch):
    import gpc_literate

    monkeypatch.setattr(cmp, "run_one", lambda d, s, f, c: _fake(d, s, f))
    records = cmp.run_comparison(
        ["crabs"],
        2,
        ["Linear"],
        out=str(tmp_path / "r.json"),
        config={"cv_seed": 3},
        progress=False,
    )
    for r in records:
        assert r["config"] == dict(cmp.DEFAULT_CONFIG, cv_seed=3)
        assert r["version"] == gpc_literate.__version__
        assert r["commit"] is None or len(r["commit"]) == 40


def test_resume_with_another_configuration_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cmp, "run_one", lambda d, s, f, c: _fake(d, s, f))
    out = tmp_path / "r.json"
    cmp.run_comparison(
        ["crabs"], 1, ["Linear"], out=str(out), config={"cv_seed": 1}, progress=False
    )
    before = out.read_text()
    with pytest.raises(ValueError, match=r"differs in \['cv_seed', 'svm_folds'\]"):
        cmp.run_comparison(
            ["crabs"],
            2,
            ["Linear"],
            out=str(out),
            progress=False,
            config={"svm_folds": 5},
        )
    # the command line runs the default configuration: refused, status 2, keys named
    assert (
        cmp.main(
            [
                "--datasets",
                "crabs",
                "--splits",
                "2",
                "--fitters",
                "Linear",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "another configuration" in err and "cv_seed" in err and "Traceback" not in err
    )
    assert out.read_text() == before
    assert (
        cmp.main(
            [
                "--datasets",
                "crabs",
                "--splits",
                "2",
                "--fitters",
                "Linear",
                "--no-progress",
                "--out",
                str(tmp_path / "new.json"),
            ]
        )
        == 0
    )


def test_retry_failed_reruns_exactly_the_failed_jobs(tmp_path, monkeypatch):
    out = str(tmp_path / "r.json")
    failing = {("crabs", 1, "Linear"), ("pima", 0, "Linear")}
    calls = []

    def flaky(dataset, split, fitter, config):
        calls.append((dataset, split, fitter))
        key = (dataset, split, fitter)
        return _fake(*key, status="failed" if key in failing else "ok")

    monkeypatch.setattr(cmp, "run_one", flaky)
    args = [
        "--datasets",
        "crabs",
        "pima",
        "--splits",
        "3",
        "--fitters",
        "Linear",
        "--no-progress",
        "--out",
        out,
    ]
    assert cmp.main(args) == 0 and len(calls) == 6
    calls.clear()
    assert cmp.main(args) == 0 and calls == []
    failing.clear()
    assert cmp.main([*args, "--retry-failed"]) == 0
    assert sorted(calls) == [("crabs", 1, "Linear"), ("pima", 0, "Linear")]
    records = cmp.load_results(out)
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--datasets", "iris"], "invalid choice: 'iris' (choose from 'crabs'"),
        (["--fitters", "GP"], "invalid choice: 'GP' (choose from 'VarGP'"),
        (["--splits", "0"], "splits must be at least 1"),
        (["--splits", "ten"], "splits must be an integer"),
        (["--datasets", "crabs", "--splits", "11"], "'crabs' has 10 random splits"),
        (["--jobs", "0"], "--jobs"),
        (["--jobs", "-2"], "--jobs"),
        (["--out", "."], "is a directory"),
        (["--unknown"], "unrecognized arguments"),
    ],
)
def test_every_bad_argument_is_refused_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cmp.main([*argv, "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_malformed_results_files_give_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cmp, "run_one", lambda d, s, f, c: _fake(d, s, f))
    good = json.dumps(
        {
            "kind": "seeger_table1",
            "config": cmp.DEFAULT_CONFIG,
            "records": [_fake("crabs", 0, "Linear")],
        }
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(cmp.__file__)))
    cases = {
        "truncated.json": (good[:-40], "not valid JSON, perhaps truncated"),
        "foreign.json": (
            '{"type": "FeatureCollection", "features": []}',
            "is not a results file of gpc_literate",
        ),
        "ida.json": (
            open(os.path.join(root, "results", "ida.json")).read(),
            "holds results of the 'ida' experiment",
        ),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_text(content)
        status = cmp.main(
            [
                "--datasets",
                "crabs",
                "--splits",
                "1",
                "--fitters",
                "Linear",
                "--no-progress",
                "--out",
                str(path),
            ]
        )
        err = capsys.readouterr().err
        assert status == 2, name
        assert message in err and "Traceback" not in err, (name, err)
        assert path.read_text() == content


def test_the_committed_results_file_is_read_and_resumed(tmp_path, monkeypatch):
    root = os.path.dirname(os.path.dirname(os.path.abspath(cmp.__file__)))
    source = os.path.join(root, "results", "seeger_table1.json")
    records = cmp.load_results(source, "seeger_table1")
    assert len(records) == 300 and "config" not in records[0]
    # version and commit were stamped afterwards from git history, as the file's note says
    assert all(r["version"] == "0.1.0" and len(r["commit"]) == 40 for r in records)
    old = json.load(open(source))
    old["records"] = [r for r in old["records"] if r["dataset"] == "crabs"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    monkeypatch.setattr(cmp, "run_one", lambda d, s, f, c: _fake(d, s, f))
    n_old = len(old["records"])
    again = cmp.run_comparison(["crabs"], 10, None, out=str(path), progress=False)
    assert again == old["records"]  # nothing to run; nothing changed
    more = cmp.run_comparison(
        ["crabs"], 10, None, out=str(path), progress=False, retry_failed=True
    )
    assert len(more) == n_old
