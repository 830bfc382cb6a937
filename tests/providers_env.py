"""The provider packages the tests run, installed the documented way, once per set of versions.

``providers_site()`` makes a venv under ``~/.cache/tradewind-tests/`` whose interpreter sees this
checkout's environment (a ``.pth`` adding its site-packages), runs ``tradewind providers install``
in it for each provider of ``PROVIDERS``, and returns the venv's site-packages: a fleet started
with it on ``PYTHONPATH`` imports the providers and what they installed. The venv is keyed on the
versions, ``INSTALLER_REVISION`` and the Python version, so the suite installs once per change
(~2 min from PyPI) and reuses it after. The dev extra cannot carry the providers: pip would
resolve their ``apache-airflow`` requirement and install Airflow itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import site
import subprocess
import sys
from pathlib import Path

#: The current releases on PyPI that support Airflow 3 (providers' versions of 2026-12).
PROVIDERS = (
    "apache-airflow-providers-common-compat==1.23.0",
    "apache-airflow-providers-common-sql==2.4.0",
    "apache-airflow-providers-common-io==1.11.0",
    "apache-airflow-providers-postgres==7.1.1",
    "apache-airflow-providers-sqlite==4.3.4",
    "apache-airflow-providers-http==6.3.0",
    "apache-airflow-providers-amazon==9.39.0",
    "apache-airflow-providers-slack==9.11.1",
    "apache-airflow-providers-smtp==3.2.0",
)


#: Raise it when a change to ``tradewind/providers/install.py`` changes what it installs.
INSTALLER_REVISION = 1


def _key() -> str:
    digest = hashlib.sha256()
    digest.update("\n".join(PROVIDERS).encode())
    digest.update(str(INSTALLER_REVISION).encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:12]


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tradewind-tests"


def make_venv(root: Path) -> str:
    """A fresh venv at ``root`` that also sees this environment's packages; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
    ours = next(p for p in site.getsitepackages() if Path(p).is_dir())
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (root / "lib" / version / "site-packages" / "tradewind-checkout.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n"
    )
    return str(root / "bin" / "python")


def _venv_root() -> Path:
    return cache_root() / f"providers-{_key()}"


def providers_ready() -> bool:
    """Whether the providers venv of these versions is made already (nothing to install)."""
    return (_venv_root() / "ready").exists()


def providers_site() -> Path:
    """The site-packages of the cached providers venv, made if missing (one maker at a time)."""
    root = _venv_root()
    site_packages = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site_packages = site_packages / "site-packages"
    ready = root / "ready"
    if ready.exists():
        return site_packages
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / f"providers-{_key()}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists():
            return site_packages
        python = make_venv(root)
        for provider in PROVIDERS:
            result = subprocess.run(
                [python, "-m", "cli", "providers", "install", provider],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"providers install {provider}: {result.stderr.strip()}")
        ready.touch()
    return site_packages
