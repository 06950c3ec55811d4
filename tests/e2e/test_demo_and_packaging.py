"""A wheel installed outside the repository works, and `msoctl demo` runs from it to the
end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

REPO = ROOT


def _check_demo(result: subprocess.CompletedProcess[str]) -> None:
    """What ``msoctl demo`` must show: every step to the end, each refusal's error line
    after its step, nothing wider than a terminal."""
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for landmark in ("$ msoctl ocs apply", "light verified on 2 lit paths",
                     "(exit code 2, as expected)", "(exit code 3, as expected)",
                     "verify: done: link-1 light arrives both ways",
                     "$ msoctl switch cc apply sw-a sw-b", "optical lanes",
                     'msoctl_up{device="amp-1"', "recovered: link-1: span-1 -> span-2",
                     "link-1: on its protection span span-2, light arrives",
                     "protection.switch", "demo finished"):
        assert landmark in result.stdout, landmark
    # the last line says it ran to the end and how long it took; how long is not judged
    # here (a loaded machine stretches it): the run's own timeout bounds it
    last = result.stdout.rstrip("\n").splitlines()[-1]
    assert re.fullmatch(r"demo finished in \d+\.\d s", last), result.stdout[-400:]
    lines = result.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []  # a terminal's width
    # each refusal's error line comes right after its step, before the exit code is told
    for code in (2, 3):
        said = lines.index(f"(exit code {code}, as expected)")
        error = next(i for i in range(said, 0, -1) if lines[i].startswith("error: "))
        step = next(i for i in range(said, 0, -1) if lines[i].startswith("$ msoctl "))
        assert step < error < said, lines[step:said + 1]
    assert "error:" not in result.stderr


@pytest.mark.slow
def test_the_demo_runs_to_the_end_from_a_wheel_installed_outside_the_repo(
        tmp_path: Path) -> None:
    """``make demo`` runs ``msoctl demo`` from the repository; here it runs from the wheel,
    installed elsewhere (the same code: run once, for both)."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(dist), str(REPO)], check=True, timeout=300,
                   cwd=tmp_path)
    (wheel,) = dist.glob("msoctl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("mibs/README.md", "yang/README.md", "emulators/lab/default.yaml",
                    "drivers/ocs/commands.py", "msoctl/cli/__init__.py",
                    "msoctl/design/tables/default.yaml", "msoctl/design/tables/deepseek-v3.yaml"):
        assert shipped in names

    venv = tmp_path / "venv"
    # No pip in the new environment (ensurepip alone takes most of this test): this run's pip
    # installs into it, as `pip --python` does for any interpreter.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path"
                           "('purelib'))"], capture_output=True, text=True, check=True).stdout
    # The dependencies come from this test run's environment; msoctl itself only from the wheel.
    Path(site.strip(), "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--disable-pip-version-check", str(wheel)], check=True,
                   timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MSOCTL_INVENTORY")}
    where = subprocess.run(
        [str(python), "-c", "import msoctl, mibs; print(msoctl.__file__);"
         "print(mibs.directory().joinpath('README.md').is_file())"],
        capture_output=True, text=True, cwd=elsewhere, env=env, check=True).stdout.split()
    assert str(REPO) not in where[0] and where[1] == "True"
    demo = subprocess.run([str(venv / "bin" / "msoctl"), "demo"], capture_output=True,
                          text=True, cwd=elsewhere, env=env, timeout=120)
    _check_demo(demo)
