"""The runtime companion: confirm static findings by running the code.

``devlint confirm`` lints, runs each entry point (a script, the test suite, a named function)
under the profiles that can show each finding's rule, in a sandboxed child process, and gives
every finding a verdict. The layout follows the run:

- ``entry_points``, ``imports``: what can be run, and which files each run can reach;
- ``sandbox``: a temporary copy of the project, a child process with limits and a deadline;
- ``child``: inside that process, the profile, the line watch, the entry point, the report;
- ``vgpu``: the virtual GPU (the only module here that imports torch, and only in a child or
  under ``pytest --vgpu``), with ``device_rules`` read from torch's native_functions.yaml;
- ``verdicts``, ``report``: from what the runs saw to one verdict per finding, in text or JSON;
- ``pytest_plugin``: ``pytest --vgpu``.

Nothing in this package is imported by the static linter; importing this package imports no
torch.
"""
