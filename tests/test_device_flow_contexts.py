"""Device placements that come from the context a function runs in (issue: device flow 2)."""

from __future__ import annotations

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
