"""``pytest --vgpu``: run a project's own test suite as if on a GPU.

Registered through the ``pytest11`` entry point, so pytest loads this module in every session;
it imports torch only when ``--vgpu`` is given. With it, ``torch.cuda.is_available()`` is True
before any test module is collected (``skipif(not torch.cuda.is_available())`` tests run), and
every device rule a GPU enforces is enforced on the CPU underneath.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

_HELP = (
    "Run the tests on devlint's virtual GPU: torch.cuda.is_available() is True, CUDA tensors "
    "live on the CPU underneath, and mixing devices fails as on a real GPU."
)


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("devlint", "devlint runtime companion")
    group.addoption("--vgpu", action="store_true", default=False, help=_HELP)


def _install() -> None:
    try:
        from devlint.runtime import vgpu
    except ImportError as error:  # no torch
        message = f"--vgpu needs torch (pip install 'devlint[runtime]'): {error}"
        raise pytest.UsageError(message) from error
    reason = "" if vgpu.installed() else vgpu.unavailable_reason()
    if reason:
        raise pytest.UsageError(f"--vgpu: {reason}")
    vgpu.install()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    # Before conftest.py files run: they often pick their device at import time.
    if getattr(early_config.known_args_namespace, "vgpu", False):
        _install()


def pytest_configure(config: Any) -> None:
    if config.getoption("vgpu", default=False):
        _install()  # already done unless the option came from somewhere else (an ini file)


def pytest_report_header(config: Any) -> Optional[str]:
    if not config.getoption("vgpu", default=False):
        return None
    import torch

    return f"devlint vgpu: a virtual cuda:0 on the CPU (torch {torch.__version__})"
