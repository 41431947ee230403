"""The zone data's version (issue 24 §3): the first TZPATH root holding ``tzdata.zi``
(its version line and a digest of its bytes), else the ``tzdata`` package."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zoneinfo
from importlib import import_module
from pathlib import Path

import pytest

from kalends.civil.zone_data import MAX_VERSION_LENGTH, version_of, zone_data_version

SOURCE = b"# version 2025b\n# A zic input file.\nR u 2007 ma - Mar Su>=8 2 1 D\n"


def _root(tmp_path: Path, name: str, data: bytes | None) -> str:
    root = tmp_path / name
    root.mkdir()
    if data is not None:
        (root / "tzdata.zi").write_bytes(data)
    return str(root)


class TestFromTzpath:
    def test_the_version_line_and_a_digest_of_the_file(self, tmp_path: Path) -> None:
        root = _root(tmp_path, "a", SOURCE)
        digest = hashlib.sha256(SOURCE).hexdigest()[:8]
        assert version_of([root]) == f"2025b-{digest}"

    def test_an_edited_copy_under_the_same_version_line_differs(self, tmp_path: Path) -> None:
        a = _root(tmp_path, "a", SOURCE)
        b = _root(tmp_path, "b", SOURCE.replace(b"Su>=8", b"lastSu"))
        assert version_of([a]).startswith("2025b-") and version_of([b]).startswith("2025b-")
        assert version_of([a]) != version_of([b])

    def test_the_first_root_holding_the_file_counts(self, tmp_path: Path) -> None:
        empty = _root(tmp_path, "empty", None)
        a = _root(tmp_path, "a", SOURCE)
        b = _root(tmp_path, "b", SOURCE.replace(b"2025b", b"2099z"))
        assert version_of([empty, b, a]).startswith("2099z-")
        assert version_of([str(tmp_path / "missing"), a, b]).startswith("2025b-")

    @pytest.mark.parametrize(
        ("first_line", "name"),
        [
            (b"# version 2024a", "2024a"),  # the usual form
            (b"#version   2023c", "2023c"),  # spacing as written by hand
            (b"# no version here", "unversioned"),  # a file without its version line
            (b"# version " + b"x" * 200, "x" * 23),  # cut to fit the column
        ],
    )
    def test_odd_version_lines_still_fit(
        self, tmp_path: Path, first_line: bytes, name: str
    ) -> None:
        root = _root(tmp_path, "a", first_line + b"\nZ X 0 - X\n")
        found = version_of([root])
        assert found.rsplit("-", 1)[0] == name
        assert len(found) <= MAX_VERSION_LENGTH


class TestFallback:
    def test_without_tzdata_zi_the_package_version(self, tmp_path: Path) -> None:
        empty = _root(tmp_path, "empty", None)
        package = import_module("tzdata").IANA_VERSION
        assert version_of([empty]) == f"{package}-pkg"
        assert version_of([]) == f"{package}-pkg"


class TestProcessVersion:
    def test_the_process_reads_its_tzpath_once(self, tmp_path: Path) -> None:
        assert zone_data_version() == version_of(tuple(zoneinfo.TZPATH))
        assert zone_data_version() is zone_data_version()

    def test_pythontzpath_chooses_the_zone_data(self, tmp_path: Path) -> None:
        root = _root(tmp_path, "a", SOURCE.replace(b"2025b", b"2031q"))
        code = "from kalends.civil.zone_data import zone_data_version; print(zone_data_version())"
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONTZPATH": root, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == version_of([root])
        assert done.stdout.startswith("2031q-")
