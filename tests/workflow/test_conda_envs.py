"""The conda environments of profiles/slurm-conda build: reproduced step by step as Snakemake and
conda do it, without conda (whose channels this machine cannot reach).

Snakemake copies envs/X.yaml to .snakemake/conda/<hash>.yaml in the working directory; `conda env
create --file <copy>` runs the pip section from the copy's folder; then Snakemake runs
envs/X.post-deploy.sh, interpreter from its shebang, inside the activated environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
import yaml

ENVS = ("core", "llm", "train")


def pip_requirements(env_file: Path) -> list[str]:
    spec = yaml.safe_load(env_file.read_text())
    return [item for entry in spec["dependencies"] if isinstance(entry, dict) for item in entry.get("pip", [])]


@pytest.mark.parametrize("env", ENVS)
def test_env_file_has_no_path_that_breaks_in_snakemakes_copy(repo, tmp_path, env):
    copy = tmp_path / ".snakemake" / "conda" / "0123abcd.yaml"
    copy.parent.mkdir(parents=True)
    shutil.copy(repo / "envs" / f"{env}.yaml", copy)
    for requirement in pip_requirements(copy):
        # conda's pip runs in the copy's folder: a relative path there points into .snakemake/.
        target = requirement.split()[-1].split("[")[0]
        assert not (target.startswith(".") or "/" in target), f"envs/{env}.yaml: {requirement!r} is a path"
    post_deploy = repo / "envs" / f"{env}.post-deploy.sh"
    assert post_deploy.read_text().startswith("#!"), post_deploy
    extras = post_deploy.read_text().split('-e "${repo}')[1].split('"')[0].strip("[]")
    declared = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert all(extra in declared for extra in filter(None, extras.split(","))), extras


@pytest.mark.slow
def test_post_deploy_installs_this_checkout_into_the_environment(repo, tmp_path):
    """envs/core: a fresh environment at Snakemake's path, the post-deploy script run as Snakemake
    runs it (from the working directory, environment activated), then polyrag imports from it."""
    workdir = tmp_path / "work"
    env_path = workdir / ".snakemake" / "conda" / "0123abcd"
    env_path.parent.mkdir(parents=True)
    shutil.copy(repo / "envs" / "core.yaml", f"{env_path}.yaml")
    venv.EnvBuilder(with_pip=True).create(env_path)  # stands in for conda's python and pip
    post_deploy = repo / "envs" / "core.post-deploy.sh"
    interpreter = post_deploy.read_text().splitlines()[0][2:].strip()
    environment = {**os.environ, "VIRTUAL_ENV": str(env_path), "PATH": f"{env_path / 'bin'}:{os.environ['PATH']}",
                   # Dependencies are pyproject's business and would be gigabytes here; this checks
                   # that the script finds and installs this checkout from any working directory.
                   "PIP_NO_DEPS": "1"}
    environment.pop("PYTHONPATH", None)
    deployed = subprocess.run(f"{interpreter} {post_deploy}", shell=True, cwd=workdir, env=environment,
                              capture_output=True, text=True, timeout=300)
    assert deployed.returncode == 0, deployed.stdout[-2000:] + deployed.stderr[-2000:]
    imported = subprocess.run([env_path / "bin" / "python", "-c", "import polyrag; print(polyrag.__file__)"],
                              cwd=tmp_path, env=environment, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    assert Path(imported.stdout.strip()) == repo / "polyrag" / "__init__.py"
    assert Path(sys.executable).resolve() != (env_path / "bin" / "python").resolve()
