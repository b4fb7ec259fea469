"""DEV008 reads the script beside a loading one: what a CPU-only `train.py` saves is CPU values."""

from __future__ import annotations

from pathlib import Path

from devlint.config import ALL_CODES
from devlint.engine import RuleSet, lint_source

TRAIN = (
    "import torch\nfrom model import RNN\nrnn = RNN(57, 128, 18)\ntorch.save(rnn, 'char-rnn.pt')\n"
)
PREDICT = "import torch\nrnn = torch.load('char-rnn.pt')\nprint(rnn(x))\n"


def _dev008(folder: Path, name: str) -> tuple[list[int], dict[str, list[object]]]:
    path = folder / name
    result = lint_source(str(path), path.read_bytes(), RuleSet(ALL_CODES))
    rows = [f.start.row for f in result.findings if f.code == "DEV008"]
    return rows, result.dependencies


def test_a_file_a_cpu_only_script_beside_saves_loads_cpu_values(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "predict.py").write_text(PREDICT)
    rows, dependencies = _dev008(tmp_path, "predict.py")
    assert rows == []
    assert str(tmp_path / "train.py") in dependencies  # a change there re-lints predict.py


def test_a_script_that_places_anything_on_a_device_proves_nothing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        TRAIN.replace("rnn = RNN(57, 128, 18)", "rnn = RNN().cuda()")
    )
    (tmp_path / "predict.py").write_text(PREDICT)
    assert _dev008(tmp_path, "predict.py")[0] == [2]


def test_another_file_name_or_no_script_beside_proves_nothing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN.replace("char-rnn.pt", "other.pt"))
    (tmp_path / "predict.py").write_text(PREDICT)
    assert _dev008(tmp_path, "predict.py")[0] == [2]
    (tmp_path / "train.py").unlink()
    assert _dev008(tmp_path, "predict.py")[0] == [2]


def test_a_checkpoint_is_reported_whatever_saves_its_name(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "resume.py").write_text(
        "import torch\nmodel.load_state_dict(torch.load('char-rnn.pt'))\n"
    )
    assert _dev008(tmp_path, "resume.py")[0] == [2]
