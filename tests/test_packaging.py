"""The package's declared ranges against the exact tested set (constraints.txt) that `make` installs with."""
from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from compendium.base import repository_root

ROOT = repository_root()


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_constraints_pin_every_declared_dependency_inside_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["book"],
                *project["optional-dependencies"]["test"]]
    pins = _pins()
    for text in declared:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is declared in pyproject.toml but not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (text, str(pins[name]))
        assert not any(spec.operator == "==" for spec in requirement.specifier), f"{text}: a range, not a pin"


def test_every_install_of_the_tested_set_reads_the_constraints():
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()
    assert "-c ../constraints.txt" in (ROOT / "binder" / "requirements.txt").read_text()
    assert "- -c constraints.txt" in (ROOT / "environment.yml").read_text()
