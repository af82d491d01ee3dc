"""gpc_literate.datasets (chapter 4): sizes, class counts, realisations, errors."""

import numpy as np
import pytest

from gpc_literate import datasets
from gpc_literate.datasets import (
    BREIMAN_DIM,
    Dataset,
    available,
    bayes_proba,
    load,
    make_ringnorm,
    make_twonorm,
    stratified_folds,
)

# name: (d, n_train, n_test, n_splits) of realisation 0, as the papers state them
SIZES = {
    "wisconsin": (9, 614, 69, 10),  # ch. 17: 683 rows, 10-fold CV, 614 training rows
    "sonar": (60, 104, 104, 2),  # Gorman & Sejnowski split (+ its exchange, NC 2000)
    "pima": (7, 200, 332, 1),  # Ripley
    "crabs": (5, 80, 120, 1),  # Williams & Barber
    "synth": (2, 250, 1000, 1),  # Ripley
    "wdbc": (30, 300, 269, 10),  # Seeger Table 1
    "banana": (2, 400, 4900, 100),  # Sundararajan & Keerthi Table 3
    "breast_cancer": (9, 200, 77, 100),
    "diabetis": (8, 468, 300, 100),
    "flare_solar": (9, 666, 400, 100),  # IDA (not in Table 3)
    "german": (20, 700, 300, 100),
    "heart": (13, 170, 100, 100),
    "image": (18, 1300, 1010, 20),
    "ringnorm": (20, 400, 7000, 100),
    "splice": (60, 1000, 2175, 20),
    "thyroid": (5, 140, 75, 100),
    "titanic": (3, 150, 2051, 100),
    "twonorm": (20, 400, 7000, 100),
    "waveform": (21, 400, 4600, 100),
    "yeast": (8, 297, 1187, 50),  # Table 6 yeast7
    "yeast5": (8, 320, 1164, 50),
    "yeast4": (8, 165, 1319, 50),
    "car": (6, 350, 1378, 50),  # Table 6 car3
    "ecoli": (7, 124, 212, 50),  # Table 6 ecoli5
}

# name: (+1, -1) over the whole set
TOTALS = {
    "wisconsin": (239, 444),
    "sonar": (111, 97),
    "pima": (177, 355),
    "crabs": (100, 100),
    "synth": (625, 625),
    "wdbc": (212, 357),
    "banana": (2376, 2924),
    "breast_cancer": (81, 196),
    "diabetis": (268, 500),
    "flare_solar": (589, 477),
    "german": (300, 700),
    "heart": (120, 150),
    "image": (1320, 990),
    "ringnorm": (3664, 3736),
    "splice": (1648, 1527),
    "thyroid": (65, 150),
    "titanic": (711, 1490),
    "twonorm": (3703, 3697),
    "waveform": (1647, 3353),
    "yeast": (35, 1449),
    "yeast5": (51, 1433),
    "yeast4": (163, 1321),
    "car": (69, 1659),
    "ecoli": (20, 316),
}

# name: (+1 train, -1 train, +1 test, -1 test) of realisation 0, where the source fixes it
SPLIT_COUNTS = {
    "sonar": (49, 55, 62, 42),
    "pima": (68, 132, 109, 223),
    "crabs": (40, 40, 60, 60),
    "synth": (125, 125, 500, 500),
    "banana": (217, 183, 2159, 2741),
    "twonorm": (207, 193, 3496, 3504),
    "waveform": (132, 268, 1515, 3085),
}

# stratified imbalanced sets: positives in every training set, Table 6's PPE
STRATIFIED = {
    "yeast": (7, 2),
    "yeast5": (11, 4),
    "yeast4": (18, 11),
    "car": (14, 4),
    "ecoli": (7, 6),
}


def counts(y):
    return int((y == 1).sum()), int((y == -1).sum())


def test_available_lists_every_set_sorted():
    names = available()
    assert names == sorted(names)
    assert set(names) == set(SIZES)
    assert {"yeast7", "ecoli5", "car3"} <= set(available(aliases=True))


@pytest.mark.parametrize("name", sorted(SIZES))
def test_sizes_and_class_counts(name):
    ds = load(name)
    assert isinstance(ds, Dataset)
    assert ds.name == name
    d, n_train, n_test, n_splits = SIZES[name]
    assert ds.X_train.shape == (n_train, d) and ds.X_test.shape == (n_test, d)
    assert ds.y_train.shape == (n_train,) and ds.y_test.shape == (n_test,)
    assert ds.n_splits == n_splits
    pos_tr, neg_tr = counts(ds.y_train)
    pos_te, neg_te = counts(ds.y_test)
    assert (pos_tr + pos_te, neg_tr + neg_te) == TOTALS[name]
    if name in SPLIT_COUNTS:
        assert (pos_tr, neg_tr, pos_te, neg_te) == SPLIT_COUNTS[name]
    assert len(ds.feature_names) == d
    assert ds.positive_class and ds.negative_class
    assert ds.description and ds.preprocessing
    assert name in ds.description


@pytest.mark.parametrize("name", sorted(SIZES))
def test_labels_dtypes_and_finite(name):
    ds = load(name)
    for r in (ds, ds.split(ds.n_splits - 1)):
        for X in (r.X_train, r.X_test):
            assert X.dtype == np.float64 and np.isfinite(X).all()
        for y in (r.y_train, r.y_test):
            assert np.issubdtype(y.dtype, np.integer)
            assert set(np.unique(y)) <= {-1, 1}
        assert set(np.unique(np.r_[r.y_train, r.y_test])) == {-1, 1}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_realisations_disjoint_deterministic_and_different(name):
    ds = load(name)
    X_all, y_all = ds.whole()
    indices = [i for i in {0, 1, ds.n_splits - 1} if i < ds.n_splits]
    for i in indices:
        r = ds.split(i)
        assert r.realisation == i
        assert np.intersect1d(r.train_index, r.test_index).size == 0
        assert np.array_equal(
            np.union1d(r.train_index, r.test_index), np.arange(len(y_all))
        )
        assert np.array_equal(r.y_train, y_all[r.train_index])
        again = load(name).split(i)
        assert np.array_equal(r.X_train, again.X_train)
        assert np.array_equal(r.y_test, again.y_test)
        assert np.array_equal(r.train_index, again.train_index)
    if ds.n_splits > 1:
        assert not np.array_equal(ds.split(0).train_index, ds.split(1).train_index)
        assert not np.array_equal(ds.split(0).X_train, ds.split(1).X_train)


def test_split_zero_is_load():
    for name in ["sonar", "german", "yeast", "wisconsin"]:
        ds = load(name)
        assert np.array_equal(ds.split(0).X_train, ds.X_train)
        assert np.array_equal(ds.split(0).y_test, ds.y_test)


def test_sonar_aspect_angle_split_and_exchange():
    ds = load("sonar")
    ex = ds.split(1)
    assert np.array_equal(ex.train_index, ds.test_index)
    assert np.array_equal(ex.test_index, ds.train_index)
    assert "mine" in ds.positive_class
    # standardised over the training set (NIPS 1999)
    assert np.allclose(ds.X_train.mean(0), 0) and np.allclose(
        ds.X_train.std(0, ddof=1), 1
    )
    raw = load("sonar", standardize="none")
    assert raw.X_train.min() >= 0 and raw.X_train.max() <= 1


def test_wisconsin_folds_partition_the_683_rows():
    ds = load("wisconsin")
    X, y = ds.whole()
    assert X.shape == (683, 9) and counts(y) == (239, 444)
    assert np.allclose(X.mean(0), 0) and np.allclose(
        X.std(0, ddof=1), 1
    )  # over all 683
    tests = [ds.split(i).test_index for i in range(10)]
    assert sorted(len(t) for t in tests) == [68] * 7 + [69] * 3
    assert np.array_equal(np.sort(np.concatenate(tests)), np.arange(683))
    assert "malignant" in ds.positive_class


def test_crabs_partition_is_first_20_of_each_group():
    ds = load("crabs", standardize="none")
    X, y = ds.whole()
    # the file holds 4 groups of 50 (B/M, B/F, O/M, O/F); the first 20 of each train
    expected = np.concatenate([np.arange(50 * g, 50 * g + 20) for g in range(4)])
    assert np.array_equal(ds.train_index, expected)
    assert ds.feature_names == ("FL", "RW", "CL", "CW", "BD")
    assert ds.X_train[0].tolist() == [8.1, 6.7, 16.1, 19.0, 7.0]


def test_ida_realisation_zero_is_ida_realisation_one():
    for name in ["banana", "twonorm", "waveform"]:
        ds = load(name)
        n = ds.n_train
        assert np.array_equal(ds.train_index, np.arange(n))
        assert not np.array_equal(ds.split(1).train_index, np.arange(n))


def test_stratified_imbalanced_partitions():
    for name, (pos_train, ppe) in STRATIFIED.items():
        ds = load(name)
        _, y = ds.whole()
        assert abs(100 * np.mean(y == 1) - ppe) <= 1.0
        for i in (0, 7, 49):
            assert (ds.split(i).y_train == 1).sum() == pos_train


def test_aliases():
    assert load("yeast7").name == "yeast"
    assert load("ECOLI5").name == "ecoli"
    assert load("car3").name == "car"
    assert np.array_equal(load("yeast7").X_train, load("yeast").X_train)
    assert load("breast-cancer").name == "breast_cancer"


def test_standardize_modes():
    all_rows = load("heart", standardize="all")
    X, _ = all_rows.whole()
    assert np.allclose(X.mean(0), 0) and np.allclose(X.std(0, ddof=1), 1)
    train = load("heart", standardize="train")
    assert np.allclose(train.X_train.mean(0), 0)
    assert np.allclose(train.X_train.std(0, ddof=1), 1)
    raw = load("heart", standardize="none")
    assert raw.X_train[:, 0].min() > 20  # ages in years
    assert "standardize='none'" in raw.preprocessing
    # standardised "all" is the raw data's affine image
    Xr, _ = raw.whole()
    assert np.allclose((Xr - Xr.mean(0)) / Xr.std(0, ddof=1), X)


def test_n_train_override():
    ds = load("twonorm", n_train=300)
    assert (ds.n_train, ds.n_test, ds.n_splits) == (300, 7100, 100)
    assert not np.array_equal(ds.split(0).train_index, ds.split(1).train_index)
    assert np.array_equal(
        ds.split(3).train_index, load("twonorm", n_train=300).split(3).train_index
    )
    strat = load("yeast", n_train=742)
    assert (strat.y_train == 1).sum() == 17 or (
        strat.y_train == 1
    ).sum() == 18  # 742 * 35 / 1484
    assert load("crabs", n_train=100).n_splits == 10


def test_arrays_are_fresh_copies():
    a = load("pima")
    a.X_train[:] = 0.0
    a.y_train[:] = 1
    b = load("pima")
    assert np.abs(b.X_train).sum() > 0
    assert counts(b.y_train) == (68, 132)
    X, y = b.whole()
    X[:] = 0.0
    assert np.abs(load("pima").whole()[0]).sum() > 0


def test_errors():
    with pytest.raises(ValueError, match="available: .*sonar"):
        load("nosuchset")
    with pytest.raises(TypeError):
        load(3)
    ds = load("heart")
    with pytest.raises(ValueError, match="out of range"):
        ds.split(100)
    with pytest.raises(ValueError):
        ds.split(-1)
    with pytest.raises(TypeError):
        ds.split(1.0)
    with pytest.raises(TypeError):
        ds.split("1")
    with pytest.raises(TypeError):
        ds.split(True)
    assert ds.split(np.int64(2)).realisation == 2
    with pytest.raises(ValueError):
        load("crabs").split(1)
    with pytest.raises(ValueError):
        load("sonar", standardize="maybe")
    with pytest.raises(ValueError):
        load("crabs", n_train=200)
    with pytest.raises(TypeError):
        load("crabs", n_train=50.0)


def test_stratified_folds_helper():
    y = np.r_[-np.ones(30, int), np.ones(13, int)]
    folds = stratified_folds(y, k=5, seed=3)
    assert np.bincount(folds).tolist() == [9, 9, 9, 8, 8]
    for f in range(5):
        assert (y[folds == f] == 1).sum() in (2, 3)
    assert np.array_equal(folds, stratified_folds(y, k=5, seed=3))
    with pytest.raises(ValueError):
        stratified_folds(y, k=1)
    with pytest.raises(TypeError):
        stratified_folds(y, k=2.0)


def test_dataset_is_frozen():
    ds = load("synth")
    with pytest.raises(AttributeError):
        ds.name = "other"
    assert "synth" in repr(ds)


def test_data_files_are_read_through_the_package(tmp_path, monkeypatch):
    # loading must not depend on the working directory
    monkeypatch.chdir(tmp_path)
    datasets._read_wisconsin.cache_clear()
    assert load("wisconsin").whole()[0].shape == (683, 9)


def test_every_data_folder_has_a_source_file():
    from importlib import resources

    root = resources.files("gpc_literate.data")
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith("__")]
    assert {p.name for p in folders} >= {
        "wisconsin",
        "sonar",
        "pima",
        "crabs",
        "synth",
        "wdbc",
        "ida",
        "yeast",
        "ecoli",
        "car",
    }
    for folder in folders:
        assert folder.joinpath("SOURCE.md").is_file(), folder.name
    ida = root.joinpath("ida")
    for sub in ida.iterdir():
        if sub.is_dir():
            assert sub.joinpath("SOURCE.md").is_file(), sub.name
    assert root.joinpath("README.md").is_file()


@pytest.mark.parametrize("make", [make_twonorm, make_ringnorm])
def test_breiman_generators(make):
    X, y = make(500, random_state=3)
    assert X.shape == (500, BREIMAN_DIM) and set(np.unique(y)) == {-1.0, 1.0}
    assert np.array_equal(X, make(500, random_state=3)[0])
    assert not np.array_equal(X, make(500, random_state=4)[0])
    with pytest.raises(ValueError, match="n must be at least 1"):
        make(0)
    with pytest.raises(TypeError, match="n must be an integer"):
        make(10.5)


def test_breiman_bayes_rule():
    X, y = make_ringnorm(20_000, random_state=0)
    p = bayes_proba("ringnorm", X)
    assert np.all((p >= 0) & (p <= 1))
    # the wide class (+1) has the larger norms: the Bayes rule calls them +1
    assert np.mean((p > 0.5) == (y > 0)) > 0.97
    X, y = make_twonorm(20_000, random_state=0)
    assert abs(np.mean((bayes_proba("twonorm", X) > 0.5) != (y > 0)) - 0.02275) < 0.005
    with pytest.raises(ValueError, match="name must be"):
        bayes_proba("threenorm", X)
    with pytest.raises(ValueError, match="20 columns"):
        bayes_proba("twonorm", X[:, :5])


# ---- the large flight-delay set (load_flights) --------------------------------------
N_FLIGHTS, N_LATE = 273_853, 65_190


@pytest.fixture(scope="module")
def flights():
    return datasets.load_flights()


def test_flights_shapes_dtypes_and_labels(flights):
    fl = flights
    assert isinstance(fl, datasets.LargeDataset) and fl.name == "flights"
    assert fl.X_train.shape == (N_FLIGHTS - 50_000, 8)
    assert fl.X_test.shape == (50_000, 8)
    assert (fl.n_train, fl.n_test, fl.n_features) == (223_853, 50_000, 8)
    assert fl.feature_names == (
        "plane_year",
        "distance",
        "air_time",
        "dep_time",
        "arr_time",
        "day_of_week",
        "day_of_month",
        "month",
    )
    for X in (fl.X_train, fl.X_test):
        assert X.dtype == np.float64 and np.isfinite(X).all()
    y = np.r_[fl.y_train, fl.y_test]
    assert np.issubdtype(y.dtype, np.integer) and set(np.unique(y)) == {-1, 1}
    assert int((y == 1).sum()) == N_LATE
    assert 0.2 <= np.mean(y == 1) <= 0.3
    assert 0.2 <= np.mean(fl.y_test == 1) <= 0.3
    assert "late" in fl.positive_class and "flights" in fl.description


def test_flights_inputs_in_their_units():
    raw = datasets.load_flights(standardize="none")
    X = np.r_[raw.X_train, raw.X_test]
    lo, hi = X.min(0), X.max(0)
    assert (lo[0], hi[0]) == (1956, 2013)  # year of manufacture
    assert lo[3] >= 1 and hi[3] <= 1440 and lo[4] >= 1 and hi[4] <= 1440  # minutes
    assert set(np.unique(X[:, 5])) == set(range(1, 8))  # day of the week
    assert (lo[6], hi[6], lo[7], hi[7]) == (1, 31, 1, 12)
    assert np.array_equal(X, np.round(X))
    assert datasets._minutes([1345, 2400, 1]).tolist() == [825, 1440, 1]
    # 2013-01-01 was a Tuesday, 2013-03-10 a Sunday, 2013-07-01 a Monday
    assert datasets._weekday([1, 3, 7], [1, 10, 1]).tolist() == [2, 7, 1]


def test_flights_split_is_deterministic_disjoint_and_nested(flights):
    fl = flights
    assert np.array_equal(
        np.sort(np.r_[fl.train_index, fl.test_index]), np.arange(N_FLIGHTS)
    )
    again = datasets.load_flights()
    assert np.array_equal(again.train_index, fl.train_index)
    assert np.array_equal(again.X_test, fl.X_test)
    small = datasets.load_flights(n_train=10_000)
    assert small.n_train == 10_000 and small.n_test == 50_000
    assert np.array_equal(small.train_index, fl.train_index[:10_000])
    assert np.array_equal(small.test_index, fl.test_index)
    assert np.array_equal(small.y_train, fl.y_train[:10_000])
    assert np.array_equal(small.X_train, datasets.load_flights(n_train=10_000).X_train)
    # a smaller test set is part of the larger one; the training rows do not change
    other = datasets.load_flights(n_train=10_000, n_test=20_000)
    assert np.isin(other.test_index, fl.test_index).all()
    assert np.array_equal(other.train_index, small.train_index)
    # the training rows are a random sample, not the file's first rows
    assert not np.array_equal(np.sort(small.train_index), np.arange(10_000))


def test_flights_standardize_modes(flights):
    fl = flights
    assert np.allclose(fl.X_train.mean(0), 0)
    assert np.allclose(fl.X_train.std(0, ddof=1), 1)
    small = datasets.load_flights(n_train=1000)
    assert np.allclose(small.X_train.mean(0), 0)
    assert np.allclose(small.X_train.std(0, ddof=1), 1)
    every = datasets.load_flights(standardize="all")
    X = np.r_[every.X_train, every.X_test]
    assert np.allclose(X.mean(0), 0) and np.allclose(X.std(0, ddof=1), 1)
    assert "standardize='all'" in every.preprocessing


def test_flights_arrays_are_fresh_copies():
    a = datasets.load_flights(n_train=100, n_test=100)
    a.X_train[:] = 0.0
    a.y_test[:] = 1
    a.train_index[:] = 0
    b = datasets.load_flights(n_train=100, n_test=100)
    assert np.abs(b.X_train).sum() > 0 and (b.y_test == -1).any()
    assert len(np.unique(b.train_index)) == 100


def test_flights_errors():
    with pytest.raises(ValueError, match="n_train"):
        datasets.load_flights(n_train=1)
    with pytest.raises(ValueError, match="n_train must be at most 223853"):
        datasets.load_flights(n_train=223_854)
    with pytest.raises(ValueError, match="n_train must be at most 263853"):
        datasets.load_flights(n_train=263_854, n_test=10_000)
    with pytest.raises(ValueError, match="n_test"):
        datasets.load_flights(n_test=0)
    with pytest.raises(ValueError, match="n_test"):
        datasets.load_flights(n_test=N_FLIGHTS)
    with pytest.raises(ValueError, match="standardize"):
        datasets.load_flights(standardize="paper")
    with pytest.raises(TypeError, match="n_train"):
        datasets.load_flights(n_train=1e4)
    with pytest.raises(TypeError, match="n_test"):
        datasets.load_flights(n_test="50000")
    with pytest.raises(TypeError, match="n_train"):
        datasets.load_flights(n_train=True)
    with pytest.raises(TypeError):
        datasets.load_flights(10_000, 50_000)  # n_test is keyword-only
