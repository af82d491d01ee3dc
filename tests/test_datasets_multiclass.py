"""gpc_literate.datasets (chapter 4): the multi-class sets of load_multiclass."""

import gzip
import hashlib
from importlib import resources

import numpy as np
import pytest

from gpc_literate import datasets
from gpc_literate.datasets import (
    MulticlassData,
    available,
    available_multiclass,
    load,
    load_multiclass,
)


def _counts(text):
    words = text.split()
    return {c: int(k) for c, k in zip(words[::2], words[1::2])}


# name: (n, d, rows per class), as the .names / .doc files state them (vehicle and
# satimage: the distributed files, whose counts their documents do not give; yeast: the
# data have 35 EXC proteins where yeast.names says 37)
SETS = {
    "car": (1728, 6, _counts("unacc 1210 acc 384 good 69 vgood 65")),
    "ecoli": (336, 7, _counts("cp 143 im 77 pp 52 imU 35 om 20 omL 5 imL 2 imS 2")),
    "yeast": (
        1484,
        8,
        _counts(
            "CYT 463 NUC 429 MIT 244 ME3 163 ME2 51 ME1 44 EXC 35 VAC 30 POX 20 ERL 5"
        ),
    ),
    "glass": (214, 9, _counts("1 70 2 76 3 17 5 13 6 9 7 29")),
    "vehicle": (846, 18, _counts("bus 218 opel 212 saab 217 van 199")),
    "segment": (
        2310,
        19,
        dict.fromkeys(
            ["BRICKFACE", "CEMENT", "FOLIAGE", "GRASS", "PATH", "SKY", "WINDOW"], 330
        ),
    ),
    "letter": (
        20000,
        16,
        _counts(
            "A 789 B 766 C 736 D 805 E 768 F 775 G 773 H 734 I 755 J 747 K 739 L 761 "
            "M 792 N 783 O 753 P 803 Q 783 R 758 S 748 T 796 U 813 V 764 W 752 X 787 "
            "Y 786 Z 734"
        ),
    ),
    "satimage": (6435, 36, _counts("1 1533 2 703 3 1358 4 626 5 707 7 1508")),
}

# md5 of the uncompressed bytes of every file the multi-class readers add (SOURCE.md)
MD5 = {
    ("glass", "glass.data"): "2732c9170bf8c483f33da3c58929c067",
    ("vehicle", "xaa.dat"): "58e47d145a615a66f63d6ebee1464c03",
    ("vehicle", "xab.dat"): "acb3f6058d5c5be32bb6f6ca32a33589",
    ("vehicle", "xac.dat"): "cfea1bcae46637fc9d809728ad5087d7",
    ("vehicle", "xad.dat"): "04322617a9c210dd628d296ee54747d8",
    ("vehicle", "xae.dat"): "ee3f88b55a12d910226e25d7a6f4b5f3",
    ("vehicle", "xaf.dat"): "ea2c7de08ebadb7210ebd71b4bbd614e",
    ("vehicle", "xag.dat"): "a5f2d9e088d7093f0e809f98a892dd99",
    ("vehicle", "xah.dat"): "ac7ee8eab9cc5094dbf67565cacafc74",
    ("vehicle", "xai.dat"): "63dc598be76f165a7526b925249db8a4",
    ("letter", "letter-recognition.data.gz"): "6a2d740def5d13ea6096272546f6d41e",
    ("satimage", "sat.trn.gz"): "2c5ba2900da0183cab2c41fdb279fa5b",
    ("satimage", "sat.tst.gz"): "02c995991fecc864e809b2c4c42cd983",
    ("ida", "image", "segmentation.data.gz"): "e4915238ecb818f8c0e50813d8b8fd9b",
    ("ida", "image", "segmentation.test.gz"): "3fac72e6f5f8f9cc85e9dbc5f805e835",
}


def test_available_multiclass_lists_the_eight_sets_sorted():
    names = available_multiclass()
    assert names == sorted(SETS)
    assert len(names) == 8
    # the binary loader's names are unchanged
    assert not {"glass", "vehicle", "segment", "letter", "satimage"} & set(available())


@pytest.mark.parametrize("name", sorted(SETS))
def test_shapes_and_class_counts(name):
    n, d, counts = SETS[name]
    mc = load_multiclass(name)
    assert isinstance(mc, MulticlassData) and mc.name == name
    assert mc.X.shape == (n, d) and mc.y.shape == (n,)
    assert len(mc.feature_names) == d and len(set(mc.feature_names)) == d
    assert mc.classes.tolist() == sorted(counts)
    assert {c: int((mc.y == c).sum()) for c in mc.classes} == counts
    assert mc.title and mc.source
    assert name in repr(mc) and f"{len(counts)} classes" in repr(mc)


@pytest.mark.parametrize("name", sorted(SETS))
def test_dtypes_finite_and_read_only(name):
    mc = load_multiclass(name)
    assert mc.X.dtype == np.float64 and np.isfinite(mc.X).all()
    assert mc.y.dtype.kind == "U" and all(isinstance(c, str) for c in mc.y.tolist())
    assert mc.classes.dtype.kind == "U"
    for array in (mc.X, mc.y, mc.classes):
        assert not array.flags.writeable
        with pytest.raises(ValueError):
            array[0] = array[1]
    with pytest.raises(AttributeError):
        mc.name = "other"


def test_names_are_case_insensitive_and_cached():
    assert load_multiclass(" Glass ") is load_multiclass("glass")
    assert load_multiclass("LETTER").name == "letter"


def test_unknown_name_and_wrong_type():
    with pytest.raises(ValueError, match="available: car, ecoli, glass, letter"):
        load_multiclass("iris")
    with pytest.raises(ValueError):
        load_multiclass("yeast7")  # a binary task of load, not a multi-class set
    with pytest.raises(TypeError):
        load_multiclass(3)


def test_car_ecoli_yeast_come_from_the_imbalanced_sets_reader():
    for name in ("car", "ecoli", "yeast"):
        X, classes = datasets._read_multiclass(name)
        mc = load_multiclass(name)
        assert mc.X is X and mc.y.tolist() == list(classes)
        # the same rows as the one-versus-rest tasks, before their standardisation
        assert np.array_equal(load(name, standardize="none").whole()[0], X)
    car = load_multiclass("car")
    assert car.feature_names == load("car").feature_names
    assert set(np.unique(car.X)) == {0.0, 1.0, 2.0, 3.0}


def test_segment_is_the_image_data_with_its_constant_column():
    seg = load_multiclass("segment")
    k = seg.feature_names.index("region_pixel_count")
    assert k == 2 and np.all(seg.X[:, k] == 9.0)
    image = load("image", standardize="none").whole()[0]
    assert np.array_equal(np.delete(seg.X, k, axis=1), image)
    assert load("image").feature_names == tuple(
        f for f in seg.feature_names if f != "region_pixel_count"
    )
    # UCI's training file comes first: 30 rows of each class
    assert seg.n_train_source == 210
    assert np.unique(seg.y[:210], return_counts=True)[1].tolist() == [30] * 7


def test_sources_given_training_sets():
    assert load_multiclass("letter").n_train_source == 16000
    sat = load_multiclass("satimage")
    assert sat.n_train_source == 4435
    train = _counts("1 1072 2 479 3 961 4 415 5 470 7 1038")  # sat.trn
    assert {c: int((sat.y[:4435] == c).sum()) for c in sat.classes} == train
    for name in ("car", "ecoli", "yeast", "glass", "vehicle"):
        assert load_multiclass(name).n_train_source is None


def test_glass_drops_the_row_number_and_keeps_the_file_values():
    glass = load_multiclass("glass")
    assert glass.feature_names[0] == "RI"
    # first row of glass.data: 1,1.52101,13.64,4.49,1.10,71.78,0.06,8.75,0.00,0.00,1
    assert glass.X[0].tolist() == [1.52101, 13.64, 4.49, 1.1, 71.78, 0.06, 8.75, 0, 0]
    assert glass.y[0] == "1" and glass.y[-1] == "7"


def test_value_ranges_of_the_documents():
    letter = load_multiclass("letter").X
    assert letter.min() == 0 and letter.max() == 15
    sat = load_multiclass("satimage").X
    assert sat.min() >= 0 and sat.max() <= 255
    vehicle = load_multiclass("vehicle")
    assert np.array_equal(vehicle.X, np.round(vehicle.X))  # integer features
    assert vehicle.y[0] == "van"  # xaa.dat's first row; no trailing blank


@pytest.mark.parametrize("parts", sorted(MD5))
def test_shipped_files_have_the_checksums_of_their_source_file(parts):
    data = resources.files("gpc_literate.data").joinpath(*parts).read_bytes()
    if parts[-1].endswith(".gz"):
        data = gzip.decompress(data)
    assert hashlib.md5(data).hexdigest() == MD5[parts]


def test_new_data_folders_have_source_files():
    root = resources.files("gpc_literate.data")
    for folder in ("glass", "vehicle", "letter", "satimage"):
        assert root.joinpath(folder, "SOURCE.md").is_file(), folder
