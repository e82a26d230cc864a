"""The one atomic file writer, `ibverify.atomic`: the old file or the new one, never a torn one, no temp left."""

import os
import stat

import pytest

from ibverify.atomic import atomic_write, atomic_write_all


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_successful_write_replaces_the_content(tmp_path):
    p = tmp_path / "sub" / "f.json"  # the folder is created
    assert atomic_write(p, "héllo\n") == p and p.read_bytes() == "héllo\n".encode("utf-8")
    atomic_write(p, b"\x00new")
    assert p.read_bytes() == b"\x00new"
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~_umask()  # what open() gives, not mkstemp's 0600
    assert [f.name for f in p.parent.iterdir()] == ["f.json"]


@pytest.mark.parametrize("durable", [True, False])
def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch, durable):
    p = tmp_path / "f.txt"
    p.write_text("old")

    def fail(src, dst):
        assert os.path.exists(src) and open(src).read() == "new"  # the data were complete before the rename
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write(p, "new", durable=durable)
    assert p.read_text() == "old" and [f.name for f in tmp_path.iterdir()] == ["f.txt"]


def test_a_write_failing_midway_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "f.txt"
    p.write_text("old")
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError("no space left")))
    with pytest.raises(OSError, match="no space"):
        atomic_write(p, "new content")
    with pytest.raises(TypeError):
        atomic_write(p, 12345)  # not bytes or str: fails inside the write
    assert p.read_text() == "old" and [f.name for f in tmp_path.iterdir()] == ["f.txt"]


def test_durable_syncs_file_and_folder_and_not_durable_syncs_nothing(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    atomic_write(tmp_path / "a", b"1")
    assert len(synced) == 2
    atomic_write(tmp_path / "b", b"2", durable=False)
    assert len(synced) == 2


def test_a_set_of_files_is_written_before_the_first_rename(tmp_path, monkeypatch):
    files = {tmp_path / "figures" / "x.svg": "<svg/>", tmp_path / "claims" / "c.html": "page", tmp_path / "index": "i"}
    for f in files:
        f.parent.mkdir(exist_ok=True)
        f.write_text("old")
    bad = dict(files)
    bad[tmp_path / "claims" / "d.html"] = None  # the writing fails at this one: nothing is renamed
    with pytest.raises(TypeError):
        atomic_write_all(bad)
    assert all(f.read_text() == "old" for f in files) and not (tmp_path / "claims" / "d.html").exists()

    real, calls = os.replace, []

    def crash_on_third(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError("killed")
        real(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_third)
    with pytest.raises(OSError):
        atomic_write_all(files)
    assert [f.read_text() for f in files] == ["<svg/>", "page", "old"]  # in order; the index last
    assert not [f for f in tmp_path.rglob("*") if f.name.endswith(".tmp")]


def test_temp_names_never_collide(tmp_path, monkeypatch):
    names = iter([b"\x00" * 4, b"\x00" * 4, b"\x01" * 4])
    monkeypatch.setattr(os, "urandom", lambda n: next(names))
    (tmp_path / ".f.00000000.tmp").write_text("someone else's")
    atomic_write(tmp_path / "f", "x")
    assert (tmp_path / "f").read_text() == "x" and (tmp_path / ".f.00000000.tmp").read_text() == "someone else's"
