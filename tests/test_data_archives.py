"""Archives the paper-scale loaders extract (compendium.data): a crafted CIFAR archive whose member would land
outside the data folder is refused before anything is written, and a well-formed one extracts."""
from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from compendium import data, standin


def _archive(path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))


@pytest.fixture
def cifar_archive(tmp_path, monkeypatch):
    """The CIFAR-10 archive's path under ``tmp_path/root``, taken as downloaded (its checksum accepted)."""
    monkeypatch.setattr(data, "_file_hash", lambda path, algorithm="md5": data._CIFAR10.md5)
    root = tmp_path / "root"
    root.mkdir()
    return root, root / data._CIFAR10.url.rsplit("/", 1)[1]


def test_cifar_archive_member_leaving_the_folder_is_refused(cifar_archive, tmp_path):
    root, archive = cifar_archive
    _archive(archive, {"cifar-10-batches-py/../../escaped": b"x", "cifar-10-batches-py/test_batch": b"y"})
    with pytest.raises(ValueError, match=r"'cifar-10-batches-py/\.\./\.\./escaped' would be written outside"):
        data.cifar10(root, "test", download=True)
    assert not (tmp_path / "escaped").exists() and not (root / "cifar-10-batches-py").exists()


def test_cifar_archive_extracts_its_batches(cifar_archive, tmp_path):
    root, archive = cifar_archive
    batches = standin.cifar10(tmp_path / "made", per_batch=2, test=3) / "cifar-10-batches-py"
    _archive(archive, {f"cifar-10-batches-py/{f.name}": f.read_bytes() for f in sorted(batches.iterdir())})
    x, y = data.cifar10(root, "test", download=True)
    assert x.shape == (3, 3, 32, 32) and y.tolist() == [0, 1, 2] and np.isfinite(x.numpy()).all()
