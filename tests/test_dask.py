"""The experiment grids on a real Dask cluster: a two-process LocalCluster (chapter 18)."""

import os
import sys
import time

import cloudpickle
import pytest
from distributed import Client, LocalCluster

from gpc_literate import experiments
from gpc_literate.experiments import (
    _parallel_results,
    dask_client,
    run_experiment,
    run_jobs,
)

cloudpickle.register_pickle_by_value(
    sys.modules[__name__]
)  # the workers cannot import tests/

REDUCED = dict(
    dataset_names=["thyroid", "heart"],
    realisations=1,
    methods=["EP(ML)", "LS-CV(NLP)"],
    config={"max_iter": 5},
    progress=False,
)


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _comparable(records):
    """The records without what may differ between runs (wall time), in job order."""
    drop = {"time"}
    return sorted(
        ({k: v for k, v in r.items() if k not in drop} for r in records),
        key=lambda r: (r["dataset"], r["realisation"], r["method"]),
    )


def test_a_reduced_ida_grid_on_the_cluster_gives_the_records_of_jobs_2(
    client, tmp_path
):
    on_cluster = run_experiment(
        "ida", **REDUCED, out=str(tmp_path / "dask.json"), client=client
    )
    local = run_experiment("ida", **REDUCED, out=str(tmp_path / "local.json"), jobs=2)
    assert len(on_cluster) == len(local) == 4
    assert all(r["status"] == "ok" for r in on_cluster)
    assert _comparable(on_cluster) == _comparable(local)
    resumed = run_experiment(
        "ida", **REDUCED, out=str(tmp_path / "dask.json"), client=client
    )
    assert _comparable(resumed) == _comparable(on_cluster)  # nothing ran again


def _dies_once(name, marker_dir, config):
    """A job that kills its worker process the first time it runs, then succeeds."""
    marker = os.path.join(marker_dir, name)
    if name == "victim" and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)  # the worker dies with the job
    return {"name": name, "status": "ok", "pid": os.getpid()}


def test_a_job_whose_worker_dies_is_run_again_and_every_record_is_kept(
    client, tmp_path
):
    tasks = [(name, str(tmp_path)) for name in ["a", "b", "victim", "c", "d"]]
    out = str(tmp_path / "grid.json")
    records = run_jobs(
        tasks,
        kind="toy",
        key=lambda r: (r["name"], str(tmp_path)),
        config={},
        out=out,
        jobs=1,
        job=_dies_once,
        retry_failed=False,
        progress=False,
        label="toy",
        client=client,
    )
    assert sorted(r["name"] for r in records) == ["a", "b", "c", "d", "victim"]
    assert all(r["status"] == "ok" for r in records)
    assert os.path.exists(tmp_path / "victim")  # it did die once
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def _sleep_job(seconds, config):
    time.sleep(seconds)
    return {"seconds": seconds}


def test_stopping_the_run_cancels_the_jobs_still_on_the_cluster(client):
    results = _parallel_results(
        [(0.1,)] + [(60.0,)] * 4, 1, {}, job=_sleep_job, client=client
    )
    assert next(results) == {"seconds": 0.1}
    results.close()  # what a Ctrl-C in run_jobs does to it
    deadline = time.monotonic() + 30
    while any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(client.processing().values())


def test_dask_client_arguments():
    with dask_client() as none:
        assert none is None
    with pytest.raises(ValueError, match="not both"):
        with dask_client("tcp://127.0.0.1:1", 2):
            pass
    with pytest.raises(ValueError, match="local_workers"):
        with dask_client(local_workers=0):
            pass
    with pytest.raises(TypeError, match="Client"):
        list(_parallel_results([(1,)], 1, {}, job=_sleep_job, client="tcp://somewhere"))


def test_the_command_line_refuses_both_a_scheduler_and_local_workers(capsys):
    with pytest.raises(SystemExit) as exit_:
        experiments.main(
            ["ida", "--scheduler", "tcp://127.0.0.1:1", "--local-workers", "2"]
        )
    assert exit_.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
