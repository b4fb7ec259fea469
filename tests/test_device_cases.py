"""The devices a parametrized test runs on, and which of its statements run in each case."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from devlint.analysis.conditions import FLAG_PATTERN
from devlint.analysis.device_cases import DeviceCase, device_cases, runs_in_case
from devlint.traversal import descendants


def _test(source: str) -> cst.FunctionDef:
    module = cst.parse_module(textwrap.dedent(source))
    return next(node for node in module.body if isinstance(node, cst.FunctionDef))


def _never_gpu_only(marks: cst.BaseExpression) -> bool:
    return False


@pytest.mark.parametrize(
    ("decorators", "expected"),
    [
        ("@pytest.mark.parametrize('device', ['cpu', 'cuda'])", [DeviceCase("device", "cpu")]),
        ("@parametrize('device', ('mps', torch.device('xpu')))", ["mps", "xpu"]),
        ("@pytest.mark.parametrize('dtype,device', [(f32, 'npu'), (f16, 'cuda')])", ["npu"]),
        ("@pytest.mark.parametrize(['x', 'device'], [pytest.param(1, 'cpu', id='c')])", ["cpu"]),
        ("@pytest.mark.parametrize('device', [pytest.param('npu', marks=needs_npu)])", ["npu"]),
        ("@pytest.mark.parametrize('device', ['cuda', 'cuda:1'])", []),
        ("@pytest.mark.parametrize('device', DEVICES)", []),  # not written here
        ("@pytest.mark.parametrize('dtype', ['cpu'])", []),  # not a device parameter
    ],
)
def test_device_cases(decorators: str, expected: list[object]) -> None:
    test = _test(f"{decorators}\ndef test_x(device, dtype):\n    pass\n")
    cases = device_cases(test, _never_gpu_only)
    if expected and isinstance(expected[0], str):
        expected = [DeviceCase("device", device) for device in expected]
    assert cases == expected


def test_a_case_its_marks_skip_without_cuda_is_left_out() -> None:
    test = _test(
        "@pytest.mark.parametrize('device', [pytest.param('cpu', marks=requires_cuda), 'mps'])\n"
        "def test_x(device):\n    pass\n"
    )

    def gpu_only(case: cst.BaseExpression) -> bool:
        return "requires_cuda" in cst.Module([]).code_for_node(case)

    assert device_cases(test, gpu_only) == [DeviceCase("device", "mps")]


def _runs(body: str, device: str = "cpu") -> bool:
    test = _test("def test_x(device, dtype):\n" + textwrap.indent(textwrap.dedent(body), "    "))
    target = next(
        node
        for node in descendants(test)
        if isinstance(node, cst.SimpleStatementLine) and "TARGET" in cst.Module([node]).code
    )

    def about_devices(node: cst.CSTNode) -> bool:
        return any(
            isinstance(inner, cst.Name) and FLAG_PATTERN.search(inner.value)
            for inner in descendants(node)
        )

    return runs_in_case(test.body.body, target, DeviceCase("device", device), about_devices)


@pytest.mark.parametrize(
    ("body", "runs"),
    [
        ("TARGET()", True),
        ("if dtype == f16:\n    TARGET()", True),  # some case of dtype reaches it
        ("if device == 'cuda':\n    TARGET()", False),
        ("if device != 'cuda':\n    TARGET()", True),
        ("if device == 'cuda':\n    pass\nelse:\n    TARGET()", True),
        ("if device == 'cuda':\n    pass\nelif dtype:\n    TARGET()", True),
        ("if device in ('cpu', 'mps'):\n    TARGET()", True),
        ("if 'cuda' in device:\n    TARGET()", False),
        ("if not device == 'cpu':\n    TARGET()", False),
        ("if device == 'cpu':\n    return\nTARGET()", False),
        ("if device == 'cpu' and dtype == f16:\n    return\nTARGET()", True),
        ("if device == 'cpu' or dtype == f16:\n    return\nTARGET()", False),
        ("if torch.cuda.is_available():\n    TARGET()", False),  # about devices: unread
        ("if not torch.cuda.is_available():\n    return\nTARGET()", False),
        ("for x in xs:\n    if device == 'cpu':\n        continue\n    TARGET()", False),
        ("if device == 'cuda':\n    pass\nelse:\n    return\nTARGET()", False),
        ("if device == 'cpu':\n    pass\nelse:\n    return\nTARGET()", True),
        ("assert device == 'cuda'\nTARGET()", False),
        ("assert dtype is not None\nTARGET()", True),
        ("with ctx():\n    TARGET()", True),
        ("try:\n    TARGET()\nexcept RuntimeError:\n    pass", False),  # may catch it
    ],
)
def test_runs_in_case(body: str, runs: bool) -> None:
    assert _runs(body) is runs
