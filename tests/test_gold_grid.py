"""gpc_literate.gold_grid: the grid of chapter 24 (book/24_evidence_maps.md), runner and CLI.

One real job on the crabs with tiny MCMC and AIS settings; the other runs use a stand-in job.
"""

import json
import zlib

import numpy as np
import pytest

import gpc_literate
from gpc_literate import datasets, gold_grid
from gpc_literate.experiments import ResultsFileError, load_results
from gpc_literate.gold import METHODS

TINY = {"n_samples": 50, "burn_in": 10, "ais_runs": 4, "ais_schedule": 5}
N_POINTS = len(gold_grid.A_GRID) * len(gold_grid.LOG_VAR_GRID)


def forbidden(*args, **kwargs):
    raise AssertionError("a finished job was run again")


def same(a, b):
    """Records equal as a results file stores them (NaN equals NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def fake_point(dataset, family, i, j, config):
    """A stand-in for run_point: a record at once, converged on even i."""
    gold = {
        "converged": i % 2 == 0,
        "log_evidence": -float(i + j),
        "n_samples": config["n_samples"],
    }
    return {
        "dataset": dataset,
        "family": family,
        "i": i,
        "j": j,
        "a": gold_grid.A_GRID[i],
        "log_var": gold_grid.LOG_VAR_GRID[j],
        "status": "ok",
        "measures": {
            "gold": gold,
            "EP": {"d_mean": 0.1 * i + j},
            "TAP": {"failed": "ValueError: broke down"},
        },
    }


# -- the grid --------------------------------------------------------------------------------


def test_grid_and_kernel():
    k = gold_grid.grid_kernel(4, 0.5, 2.0)
    assert k.length_scale == pytest.approx(2.0 * np.exp(0.5), rel=1e-14)
    assert k.variance == pytest.approx(np.exp(2.0), rel=1e-14)
    assert isinstance(k.length_scale, float) and isinstance(k.variance, float)
    x = np.zeros((1, 4))
    z = np.full((1, 4), 2.0 * np.exp(0.5) / 2.0)  # |x - z| = one length scale
    assert k(x)[0, 0] == pytest.approx(np.exp(2.0))
    assert k(x, z)[0, 0] == pytest.approx(np.exp(2.0) * np.exp(-0.5))


def test_grid_tasks_cover_the_grid_once():
    tasks = gold_grid._grid_tasks(None, None, 1, None)
    assert len(tasks) == len(set(tasks)) == len(gold_grid.DATASETS) * 2 * N_POINTS
    tasks = gold_grid._grid_tasks(["crabs", "crabs"], ["logistic"], -1, {"seed": 1})
    assert len(tasks) == N_POINTS and tasks[0] == ("crabs", "logistic", 0, 0)
    assert tasks[-1] == (
        "crabs",
        "logistic",
        len(gold_grid.A_GRID) - 1,
        len(gold_grid.LOG_VAR_GRID) - 1,
    )


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            dict(dataset_names=["iris"]),
            ValueError,
            "dataset_names: unknown data set 'iris'",
        ),
        (dict(dataset_names=[]), ValueError, "at least one"),
        (
            dict(families=["gaussian"]),
            ValueError,
            "families: unknown family 'gaussian'",
        ),
        (dict(families=[]), ValueError, "at least one"),
        (dict(jobs=0), ValueError, "jobs"),
        (dict(jobs=-2), ValueError, "jobs"),
        (dict(jobs=1.5), TypeError, "jobs"),
        (
            dict(config={"n_sample": 10}),
            ValueError,
            r"unknown config keys \['n_sample'\]",
        ),
        (dict(points=[(7, 0)]), ValueError, "points must be"),
        (dict(points=[(0, 7)]), ValueError, "points must be"),
        (dict(points=[(0, 0), (-1, 2)]), ValueError, "points must be"),
        (dict(points=[]), ValueError, "points must list at least one"),
        (
            dict(dataset_names="iris"),
            ValueError,
            "dataset_names: unknown data set 'iris'",
        ),
    ],
)
def test_bad_grid_arguments_are_refused(kwargs, error, message, tmp_path, monkeypatch):
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    out = tmp_path / "g.json"
    args = dict(dataset_names=["crabs"], families=["probit"])
    args.update(kwargs)
    with pytest.raises(error, match=message):
        gold_grid.run_grid(
            args.pop("dataset_names"),
            args.pop("families"),
            out=str(out),
            progress=False,
            **args,
        )
    assert not out.exists()


# -- one job ---------------------------------------------------------------------------------


def test_run_point_calls_compare_methods_with_the_jobs_seed(monkeypatch):
    calls = []

    def spy(kernel, X, y, X_test, y_test, family, *, rng, **settings):
        calls.append((kernel, X.shape, X_test.shape, family, rng, settings))
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(gold_grid, "compare_methods", spy)
    record = gold_grid.run_point("crabs", "logistic", 3, 5, config={"n_samples": 7})
    assert record == {
        "dataset": "crabs",
        "family": "logistic",
        "i": 3,
        "j": 5,
        "a": 0.5,
        "log_var": 5.0,
        "status": "failed",
        "message": "LinAlgError: not positive definite",
    }
    kernel, x_shape, xt_shape, family, rng, settings = calls[0]
    d = datasets.load("crabs")
    assert (x_shape, xt_shape, family) == (d.X_train.shape, d.X_test.shape, "logistic")
    assert kernel.length_scale == pytest.approx(np.sqrt(5) * np.exp(0.5))
    assert kernel.variance == pytest.approx(np.exp(5.0))
    assert rng == [2005, zlib.crc32(b"crabs/logistic"), 3, 5]
    assert settings == {
        "n_samples": 7,
        "burn_in": 200,
        "ais_runs": 64,
        "ais_schedule": 200,
    }
    gold_grid.run_point("crabs", "logistic", 3, 5, config={"n_samples": 7})
    gold_grid.run_point("crabs", "probit", 3, 5)
    assert calls[1][4] == rng and calls[2][4][1] != rng[1]  # same job, same draws


@pytest.mark.parametrize(
    "err", [ValueError("TAP broke down"), ZeroDivisionError("zero")]
)
def test_run_point_records_a_failed_fit(err, monkeypatch):
    def raising(*args, **kwargs):
        raise err

    monkeypatch.setattr(gold_grid, "compare_methods", raising)
    record = gold_grid.run_point("crabs", "probit", 0, 0, config=TINY)
    assert record["status"] == "failed" and "measures" not in record
    assert record["message"] == f"{type(err).__name__}: {err}"


def test_run_grid_writes_one_real_job_resumes_and_refuses_another_config(
    tmp_path, monkeypatch
):
    out = tmp_path / "res" / "grid.json"
    records = gold_grid.run_grid(
        ["crabs"],
        ["probit"],
        points=[(2, 0)],
        out=str(out),
        config=TINY,
        progress=False,
    )
    assert len(records) == 1
    r = records[0]
    assert (r["dataset"], r["family"], r["i"], r["j"], r["a"], r["log_var"]) == (
        "crabs",
        "probit",
        2,
        0,
        0.0,
        0.0,
    )
    assert r["status"] == "ok", r.get("message")
    assert r["config"] == dict(gold_grid.DEFAULT_CONFIG, **TINY)
    assert r["version"] == gpc_literate.__version__
    assert list(r["measures"]) == ["gold", *METHODS["probit"]]
    g = r["measures"]["gold"]
    assert g["converged"] is False  # 50 draws per chain cannot pass
    assert np.isfinite(g["log_evidence"]) and g["log_evidence"] < 0
    assert 0.0 <= g["test_error"] <= 1.0 and g["min_ess"] > 0
    assert np.isfinite(r["measures"]["EP"]["d_log_evidence"])
    data = json.loads(out.read_text())
    assert data["kind"] == "gold_grid" and same(data["records"], records)
    assert data["config"] == dict(gold_grid.DEFAULT_CONFIG, **TINY)

    # resuming: the job is in the file, so it is not run again and the file is not rewritten
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    mtime = out.stat().st_mtime_ns
    again = gold_grid.run_grid(
        ["crabs"],
        ["probit"],
        points=[(2, 0)],
        out=str(out),
        config=TINY,
        progress=False,
    )
    assert same(again, records) and out.stat().st_mtime_ns == mtime

    # another configuration: refused, the file untouched
    before = out.read_text()
    with pytest.raises(
        ResultsFileError, match=r"another configuration.*\['n_samples'\]"
    ):
        gold_grid.run_grid(
            ["crabs"],
            ["probit"],
            points=[(2, 0)],
            out=str(out),
            config=dict(TINY, n_samples=60),
            progress=False,
        )
    assert out.read_text() == before

    # a new point with the same configuration is added to the file
    monkeypatch.setattr(gold_grid, "run_point", fake_point)
    merged = gold_grid.run_grid(
        ["crabs"],
        ["probit"],
        points=[(2, 0), (4, 3)],
        out=str(out),
        config=TINY,
        progress=False,
    )
    assert [(m["i"], m["j"]) for m in merged] == [(2, 0), (4, 3)]
    assert same(merged[0], records[0])


def test_failed_jobs_are_kept_and_rerun_only_on_request(tmp_path, monkeypatch):
    out = str(tmp_path / "g.json")

    def broken(*args, **kwargs):
        raise ValueError("broke")

    monkeypatch.setattr(gold_grid, "compare_methods", broken)
    records = gold_grid.run_grid(
        ["crabs"],
        ["probit"],
        points=[(0, 0), (1, 1)],
        out=out,
        config=TINY,
        progress=False,
    )
    assert [r["status"] for r in records] == ["failed", "failed"]
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    assert (
        gold_grid.run_grid(
            ["crabs"], ["probit"], points=[(0, 0)], out=out, config=TINY, progress=False
        )
        == records
    )
    monkeypatch.setattr(gold_grid, "run_point", fake_point)
    records = gold_grid.run_grid(
        ["crabs"],
        ["probit"],
        points=[(1, 1)],
        out=out,
        config=TINY,
        progress=False,
        retry_failed=True,
    )
    assert [(r["i"], r["status"]) for r in records] == [(0, "failed"), (1, "ok")]


# -- maps ------------------------------------------------------------------------------------


def test_grid_array_fills_its_cells_and_nan_elsewhere():
    records = [
        fake_point("crabs", "probit", 1, 2, {"n_samples": 5}),
        fake_point("crabs", "probit", 6, 0, {"n_samples": 5}),
        fake_point("crabs", "logistic", 3, 3, {"n_samples": 5}),  # another family
        fake_point("pima", "probit", 4, 4, {"n_samples": 5}),  # another data set
        {
            "dataset": "crabs",
            "family": "probit",
            "i": 5,
            "j": 5,
            "status": "failed",
            "message": "ValueError: x",
        },
    ]
    ep = gold_grid.grid_array(records, "crabs", "probit", "EP", "d_mean")
    assert ep.shape == (len(gold_grid.A_GRID), len(gold_grid.LOG_VAR_GRID))
    assert ep[1, 2] == pytest.approx(2.1) and ep[6, 0] == pytest.approx(0.6)
    mask = np.zeros(ep.shape, dtype=bool)
    mask[1, 2] = mask[6, 0] = True
    assert np.all(np.isnan(ep[~mask]))
    converged = gold_grid.grid_array(records, "crabs", "probit", "gold", "converged")
    assert converged[6, 0] == 1.0 and converged[1, 2] == 0.0
    for method, key in (("TAP", "d_mean"), ("SVM", "d_mean"), ("EP", "bits")):
        assert np.all(
            np.isnan(gold_grid.grid_array(records, "crabs", "probit", method, key))
        )
    assert np.all(np.isnan(gold_grid.grid_array([], "crabs", "probit", "EP", "d_mean")))


# -- the command line ------------------------------------------------------------------------


def test_main_runs_resumes_and_summarises(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gold_grid, "run_point", fake_point)
    out = tmp_path / "g.json"
    args = [
        "--datasets",
        "crabs",
        "--families",
        "logistic",
        "--n-samples",
        "8",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert gold_grid.main(args) == 0
    assert capsys.readouterr().out.strip() == (
        "49 records: 49 ok, 28 with a converged gold standard"
    )  # i = 0, 2, 4, 6
    records = load_results(out, "gold_grid")
    assert all(
        r["config"] == dict(gold_grid.DEFAULT_CONFIG, n_samples=8) for r in records
    )
    assert all(r["measures"]["gold"]["n_samples"] == 8 for r in records)
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    assert gold_grid.main(args) == 0
    assert gold_grid.main([*args[:4], "--no-progress", "--out", str(out)]) == 2  # 4000
    err = capsys.readouterr().err
    assert "another configuration" in err and "Traceback" not in err


def test_main_reports_a_malformed_results_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    out = tmp_path / "g.json"
    out.write_text('{"kind": "gold_grid", "config": {}, "recor')
    assert (
        gold_grid.main(["--datasets", "crabs", "--no-progress", "--out", str(out)]) == 2
    )
    assert "not valid JSON" in capsys.readouterr().err
    out.write_text(json.dumps({"kind": "ida", "config": {}, "records": []}))
    assert (
        gold_grid.main(["--datasets", "crabs", "--no-progress", "--out", str(out)]) == 2
    )
    assert "holds results of the 'ida' experiment" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--datasets", "iris"], "invalid choice: 'iris'"),
        (["--families", "probit", "--datasets"], "expected at least one argument"),
        (["--families", "gaussian"], "invalid choice: 'gaussian'"),
        (["--jobs", "0"], "--jobs"),
        (["--jobs", "two"], "--jobs"),
        (["--n-samples", "3"], "n-samples must be at least 4"),
        (["--n-samples", "many"], "n-samples must be an integer"),
        (["--points", "1"], "unrecognized arguments: --points"),
    ],
)
def test_every_bad_argument_exits_with_status_2(
    argv, message, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    out = tmp_path / "g.json"
    with pytest.raises(SystemExit) as exc:
        gold_grid.main(["--no-progress", "--out", str(out), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_an_out_that_is_a_directory_exits_with_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gold_grid, "run_point", forbidden)
    with pytest.raises(SystemExit) as exc:
        gold_grid.main(["--datasets", "crabs", "--no-progress", "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"--out {tmp_path} is a directory" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_single_name_is_one_data_set_not_its_letters():
    tasks = gold_grid._grid_tasks("crabs", "logistic", 1, None)
    assert {t[:2] for t in tasks} == {("crabs", "logistic")}
    assert len(tasks) == len(gold_grid.A_GRID) * len(gold_grid.LOG_VAR_GRID)
