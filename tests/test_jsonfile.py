"""JSON files: atomic writes (a failed write keeps the old file and leaves no temporary one) and
reads that name a damaged file."""

from pathlib import Path

import pytest

from wbsim.errors import WbsimError
from wbsim.jsonfile import read_json, write_json


def test_round_trip_creates_the_folder(tmp_path):
    path = tmp_path / "a" / "b" / "x.json"
    write_json(path, {"k": [1, 2.5, None]})
    assert read_json(path) == {"k": [1, 2.5, None]}
    assert path.read_text().endswith("\n")


def test_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    write_json(path, {"v": 1})
    real = Path.write_text

    def full_disk(self, text, *a, **k):
        real(self, text[:3])  # half a file, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(WbsimError, match=r"x.json: could not be written \(No space left"):
        write_json(path, {"v": 2})
    monkeypatch.undo()
    assert read_json(path) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_nan_refused_before_writing_when_asked(tmp_path):
    path = tmp_path / "x.json"
    with pytest.raises(ValueError):
        write_json(path, {"v": float("nan")}, allow_nan=False)
    assert not path.exists()


def test_damaged_and_missing_files_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(WbsimError, match=r"bad.json: cannot be read as JSON .*the log is damaged"):
        read_json(bad, what="the log")
    with pytest.raises(WbsimError, match="missing.json"):
        read_json(tmp_path / "missing.json")
    assert read_json(tmp_path / "missing.json", {}) == {}


def test_write_file_takes_bytes_and_keeps_the_old_file_on_a_full_disk(tmp_path, monkeypatch):
    from wbsim.jsonfile import write_file

    path = tmp_path / "sub" / "model.zip"
    write_file(path, b"PK old")
    real = Path.write_bytes

    def full_disk(self, data):
        real(self, data[:2])
        raise OSError(27, "File too large")

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(WbsimError, match=r"model.zip: could not be written \(File too large"):
        write_file(path, b"PK new, longer")
    monkeypatch.undo()
    assert path.read_bytes() == b"PK old" and [p.name for p in path.parent.iterdir()] == [
        "model.zip"
    ]
