"""Device placements that come from the context a function runs in (issue: device flow 2)."""

from __future__ import annotations

import ast
from pathlib import Path

from devlint.analysis.contexts import CONTEXTS_PER_FUNCTION
from devlint.analysis.flow import DeviceFlow
from devlint.analysis.names import ImportMap
from devlint.analysis.parameters import is_test_module
from devlint.analysis.project import path_in_project
from devlint.analysis.syntax import SourceText
from devlint.analysis.values import Where
from tests.helpers import lint_snippet


def test_a_test_named_for_cuda_is_not_guarded_by_its_name() -> None:
    source = "import torch\ndef test_forward_cuda():\n    torch.zeros(2).cuda()\n"
    found = lint_snippet(source, {"DEV001"})
    assert [(f.code, f.start.row, f.start.column) for f in found] == [("DEV001", 3, 5)]


def test_a_skip_marker_still_guards_a_cuda_test() -> None:
    source = (
        "import pytest\nimport torch\n"
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test_forward_cuda():\n    torch.zeros(2).cuda()\n"
    )
    assert lint_snippet(source, {"DEV001"}) == []


def test_a_helper_named_for_the_gpu_is_still_left_to_its_callers() -> None:
    source = "import torch\ndef to_gpu(x):\n    return x.cuda()\n"
    assert lint_snippet(source, {"DEV001"}) == []


def test_parameters_used_as_tensors_only_through_tensor_methods_count() -> None:
    # `x.shape` is shared with numpy arrays: no evidence that `x` is a tensor.
    source = "import torch\ndef f(x):\n    n = x.shape[0]\n    return x + torch.zeros(n)\n"
    assert lint_snippet(source, {"DEV005", "DEV006"}) == []
    typed = "import torch\ndef f(x: 'torch.Tensor'):\n    return x + torch.zeros(3)\n"
    assert [f.start.row for f in lint_snippet(typed, {"DEV005"})] == [3]


def test_helpers_of_a_test_module_take_their_tests_data_where_it_is() -> None:
    source = (
        "import torch\ndef interpolate(points: torch.Tensor):\n    return points * torch.ones(3)\n"
    )
    assert [f.start.row for f in lint_snippet(source, {"DEV005"}, path="helpers.py")] == [3]
    assert lint_snippet(source, {"DEV005"}, path="tests/test_grid.py") == []
    assert lint_snippet(source, {"DEV005"}, path="tests/utils.py") == []  # the tests' helpers


def test_a_module_of_a_test_module_placing_nothing_runs_on_the_tests_cpu_data() -> None:
    source = (
        "import torch\nclass Bad(torch.nn.Module):\n    def forward(self, data):\n"
        "        factors = torch.ones(len(data))\n        return data.norm(dim=-1) * factors\n"
    )
    assert [f.start.row for f in lint_snippet(source, {"DEV005"}, path="models.py")] == [4]
    assert lint_snippet(source, {"DEV005"}, path="tests/test_models.py") == []
    moved = source + "def test_gpu():\n    Bad().to('cuda')(torch.rand(3, 2, device='cuda'))\n"
    assert [f.start.row for f in lint_snippet(moved, {"DEV005"}, path="tests/test_m.py")] == [4]


def test_only_folders_inside_the_project_make_a_test_module(tmp_path: Path) -> None:
    project = tmp_path / "tests" / "work"
    (project / "lib").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    assert path_in_project(str(project / "lib" / "ops.py")) == str(Path("lib", "ops.py"))
    assert not is_test_module(path_in_project(str(project / "lib" / "ops.py")))
    assert is_test_module(path_in_project(str(project / "tests" / "utils.py")))


def _flow(source: str) -> DeviceFlow:
    tree = ast.parse(source)
    names = ImportMap()
    names.add_syntax_statements(tree.body)
    return DeviceFlow(tree, names, SourceText(source))


def test_a_helper_is_analysed_in_a_bounded_number_of_contexts() -> None:
    calls = "".join(f"y{i} = double(torch.zeros({i + 1}).to('cuda:{i}'))\n" for i in range(12))
    source = "import torch\ndef double(x):\n    return x * 2\n" + calls
    flow = _flow(source)
    assert max(flow._context_counts.values()) == CONTEXTS_PER_FUNCTION
    # within the bound, the result keeps the argument's placement; past it, nothing is known
    first = flow.globals["y0"]
    assert first.where is Where.DEVICE and first.placement.device == "cuda:0"
    assert flow.globals["y11"].where is Where.UNKNOWN


def test_nested_loops_reach_a_fixpoint() -> None:
    loops = "".join("    " * depth + f"for i{depth} in range(2):\n" for depth in range(6))
    source = "import torch\nx = torch.zeros(3)\n" + loops + "    " * 6 + "x = x.cuda()\n"
    flow = _flow(source)
    assert flow.globals["x"].where is Where.UNKNOWN  # the CPU joined with a device


def test_a_value_moved_at_the_end_of_an_iteration_is_seen_at_the_next() -> None:
    source = (
        "import torch\nfor step in range(3):\n    if step:\n        y = last + 1\n"
        "    last = torch.ones(3).cuda()\n"
    )
    tree = ast.parse(source)
    names = ImportMap()
    names.add_syntax_statements(tree.body)
    flow = DeviceFlow(tree, names, SourceText(source))
    (addition,) = (node for node in ast.walk(tree) if isinstance(node, ast.BinOp))
    assert flow.value_of(addition).where is Where.DEVICE


def test_a_tensor_converted_from_numpy_is_reported_where_it_meets_the_input() -> None:
    # `torch.from_numpy` takes no `device=`: the finding stays on the operation, not the call.
    source = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x, a):\n        t = torch.from_numpy(a)\n        return x * t\n"
    )
    [found] = lint_snippet(source, {"DEV005"})
    assert (found.start.row, found.start.column) == (6, 20)
    assert "created on the CPU by `torch.from_numpy(...)` at line 5" in found.message


def test_a_recursive_method_is_analysed_once_and_reports_at_its_callers_factory() -> None:
    source = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def walk(self, x, mask):\n        if x.dim() > 1:\n"
        "            return self.walk(x[0], mask)\n        return x * mask\n"
        "    def forward(self, x):\n        return self.walk(x, torch.ones(3))\n"
    )
    [found] = lint_snippet(source, {"DEV005"})
    assert (found.start.row, found.start.column) == (9, 29)
    assert "`walk`, called at line 9, combines it with" in found.message


def test_a_method_returning_a_cpu_tensor_is_not_taken_for_the_inputs_device() -> None:
    # `self._mask(x)` used to count as "on the input's device" because `x` is passed; its code
    # says the CPU, and the finding goes where `device=` belongs, in the method.
    source = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def _mask(self, x):\n        return torch.ones(x.shape)\n"
        "    def forward(self, x):\n        return x * self._mask(x)\n"
    )
    [found] = lint_snippet(source, {"DEV005"})
    assert (found.start.row, found.start.column) == (5, 16)
    moved = source.replace("torch.ones(x.shape)", "torch.ones(x.shape, device=x.device)")
    assert lint_snippet(moved, {"DEV005"}) == []


def test_a_method_called_with_values_on_one_device_is_silent() -> None:
    source = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def _score(self, logits, mask):\n        return logits * mask\n"
        "    def forward(self, x):\n"
        "        return self._score(x, torch.ones(x.shape, device=x.device))\n"
    )
    assert lint_snippet(source, {"DEV005", "DEV006"}) == []


def test_a_static_method_binds_its_arguments_from_the_first() -> None:
    # `self.scale(x, w)` on a staticmethod passes `x` to its first parameter: no `self` to skip.
    source = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    @staticmethod\n    def scale(x, w):\n        return x * w\n"
        "    def forward(self, x):\n        return self.scale(x, torch.ones(3))\n"
    )
    [found] = lint_snippet(source, {"DEV005"})
    assert (found.start.row, found.start.column) == (8, 30)
    wrapped = source.replace("    @staticmethod\n", "    @functools.cache\n")
    assert lint_snippet(wrapped, {"DEV005"}) == []  # not the code the call runs: unknown
