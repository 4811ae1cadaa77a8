"""What `pip install .` puts on a user's machine: one import package,
`phasegate`, whose public API, command and `python -m` all work from a wheel
built out of this repository and installed into a fresh virtual environment."""

from __future__ import annotations

import ast
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Repository folder -> the import package it becomes.
MAPPED = {"engine": "phasegate", "console": "phasegate.console", "sample_runs": "phasegate.sample_runs"}
# One xdist worker for the module: the wheel and its venv are built once.
pytestmark = pytest.mark.xdist_group("packaging")


def test_every_package_folder_is_listed_for_setuptools() -> None:
    """`packages` is an explicit list (setuptools' `find` does not follow a
    package-dir mapping): a new sub-package must be added there or it would
    be missing from every install."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert conf["package-dir"] == {v: k for k, v in MAPPED.items()}
    found = set()
    for folder, package in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *rel)))
    assert set(conf["packages"]) == found


def test_nothing_imports_the_repository_folders_by_name() -> None:
    """The folders are the layout; the code is imported only as `phasegate`."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        if ".venv" in path.parts or "build" in path.parts or ".ci" in path.parts:  # .ci/floor-venv too
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in MAPPED]
    assert offenders == []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this checkout installed into a fresh venv. Its dependencies
    come from this interpreter's site-packages through a `.pth` line (appended
    after the venv's own site-packages, and without running that folder's own
    `.pth` hooks), so the test needs no network for them."""
    tmp = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp / "dist").glob("phasegate-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    before = set(p.name for p in site.iterdir())
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    (site / "phasegate_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (tmp / "added.txt").write_text("\n".join(sorted(set(p.name for p in site.iterdir()) - before)))
    return env_dir


def _run(env_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, timeout=120, cwd=env_dir)


def test_the_wheel_installs_one_top_level_package(installed: Path) -> None:
    added = (installed.parent / "added.txt").read_text().split()
    top = sorted(n for n in added if not n.endswith((".dist-info", ".pth")) and n != "__pycache__")
    assert top == ["phasegate"]
    bin_dir = installed / "bin"
    tcss = list((installed / "lib").rglob("phasegate/console/*.tcss"))
    assert tcss, "the console's stylesheet is not in the wheel"
    assert (bin_dir / "phasegate").exists()


def test_the_installed_command_and_module_answer(installed: Path) -> None:
    bin_dir = installed / "bin"
    for argv in ([str(bin_dir / "phasegate"), "--help"], [str(bin_dir / "python"), "-m", "phasegate", "--help"]):
        p = _run(installed, *argv)
        assert p.returncode == 0, p.stderr
        assert "usage: phasegate" in p.stdout and "console" in p.stdout


def test_the_installed_public_api_imports(installed: Path) -> None:
    code = (
        "import phasegate, sys; from phasegate import Workflow, Engine, PhaseContext; "
        "import phasegate.console, phasegate.sample_runs.billing; "
        "print(phasegate.__file__); print(sorted(m for m in ('engine', 'console', 'sample_runs') if m in sys.modules))"
    )
    p = _run(installed, str(installed / "bin" / "python"), "-c", code)
    assert p.returncode == 0, p.stderr
    where, stray = p.stdout.splitlines()
    assert Path(where).is_relative_to(installed)
    assert stray == "[]"


def test_a_target_stored_by_0_1_still_loads() -> None:
    """Runs recorded before the samples moved under `phasegate` keep their
    stored target (`sample_runs.billing:wf`) and still resume."""
    from phasegate.authoring.loader import load
    from phasegate.sample_runs import billing

    assert load("sample_runs.billing:wf") is billing.wf
