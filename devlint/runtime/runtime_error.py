"""``DEV900`` (runtime-error): the companion's own finding, documented like a rule."""

from __future__ import annotations

from devlint.rules.base import Rule
from devlint.runtime.profiles import DEVICE_ERRORS, RUNTIME_ERROR_CODE


class RuntimeErrorFinding(Rule):
    """
    ## What it does
    Reported by `devlint confirm` (and `check --confirm`), never by the static
    rules: an exception that stopped a run of the code (a script, a test, a
    named function) and that no static finding explains (none at its line,
    or none whose error it is). The location is the
    innermost frame of the project's own code in the traceback; the message
    gives the exception, the profile and the entry point (or the failing
    test), and what the error means when it is a device error PyTorch raises
    (the table below).

    ## Why is this bad?
    The run failed there: on the machine the profile stands for (`cpu-host`:
    no GPU, `vgpu`: a GPU, `mps`: an Apple GPU), the code does not get past
    that line. When it is a device error, a static rule missed it (a device
    chosen by a helper in another package, an integer device, a device read
    from a file); when it is not, the code fails for another reason, which
    stops the findings after it from being confirmed.

    ## Example
    ```python
    import torch

    x = torch.zeros(2, device=0)  # "Cannot access accelerator device when none is available"
    ```

    ## Use instead
    ```python
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.zeros(2, device=device)
    ```

    ## Fix safety
    No automatic fix: the finding comes from a run, not from the code's syntax.
    """

    code = RUNTIME_ERROR_CODE
    name = "runtime-error"
    summary = "an exception stopped a run and no static finding explains it"
    default_enabled = False  # the static linter never reports it

    @classmethod
    def documentation(cls) -> str:
        items = "\n".join(
            f'- `{error.profile}`: {error.meaning} ("{error.says}")' for error in DEVICE_ERRORS
        )
        return f"{super().documentation()}\n\n## Device errors it recognises\n{items}"
