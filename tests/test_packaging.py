"""The package's declared ranges against the exact tested set (constraints.txt) that `make` installs with."""
from __future__ import annotations

import re
import tomllib

import nbformat
import yaml

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


def test_the_repository_address_is_the_same_everywhere():
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    assert yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"] == url
    assert yaml.safe_load((ROOT / "CITATION.cff").read_text())["repository-code"] == url
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(notebook, as_version=4).cells
        install = next(c.source for c in cells if c.cell_type == "code" and '"pip", "install"' in c.source)
        assert f'"git+{url}"' in install, f"{notebook.name}'s install cell does not name {url}"


def test_license_and_citation_match_the_metadata_and_the_papers():
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["license"] == "MIT"
    bib = (ROOT / "book" / "references.bib").read_text()
    cited = {ref["url"] for ref in citation["references"]}
    for key in ("ziller2024bounding", "fmte", "chaudhuri2024hcr", "maciazek2024transfer", "huang2024diffusion"):
        entry = bib[bib.index("{" + key + ","):]
        url = re.search(r"url\s*=\s*\{([^}]*)\}", entry).group(1)
        assert url in cited, f"CITATION.cff does not list {key} ({url})"


def test_workflows_run_the_readme_commands():
    makefile = (ROOT / "Makefile").read_text()
    for name, target in (("test.yml", "test"), ("pages.yml", "book")):
        workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
        runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
        assert any(run.startswith(f"make {target}") for run in runs), (name, runs)
        assert re.search(rf"^{target}:", makefile, re.M), f"the Makefile has no {target} target"
