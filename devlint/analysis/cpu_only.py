"""Files that never use a device: what they save holds CPU tensors only (DEV008's evidence).

A tutorial's `train.py` that saves `torch.save(rnn, "char-rnn.pt")` for its `predict.py`, or a
script that saves its model and loads it back, writes CPU tensors where nothing it runs can
place one on a device. The test is deliberately coarse, so that it errs towards "may use a
device" (and DEV008 keeps its finding):

- no device word in the file's text: `cuda`, `device` (`torch.device`, `device=`,
  `device_map`), `mps`, `xpu`, `.to(`, `DataParallel`, `accelerat…` (Accelerate),
  `Trainer`, `set_default…`, `distributed`, ...;
- every import (at any depth, `*` included) names the standard library, a known data or
  plotting library, or a module of the same folder that passes the same test; a relative
  import or any other package may move a model for it (`model.py`'s `self.cuda()`).

What the lint read (the files and the folder's listing) is recorded as a dependency of its
cached result, so that a file added to the folder, or one that starts using a GPU, re-lints it.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from devlint.analysis.project import (
    CODE_SUFFIXES,
    ByStamp,
    bytes_digest,
    listing_digest,
    record_dependency,
)
from devlint.analysis.syntax import dotted_name, keyword_value, string_value
from devlint.complexity import parse_quietly
from devlint.notebook import NOTEBOOK_SUFFIX, NotebookError, parse_notebook

DEVICE_WORDS = re.compile(
    r"cuda|device|\b(?:mps|xpu|hpu|npu|xla|tpu)\b|\.to\(|DataParallel|accelerat|Trainer|"
    r"set_default|distributed|\bgpu",
    re.IGNORECASE,
)
# Libraries that never move a user's model to a device.
_LIBRARIES = frozenset(sys.stdlib_module_names) | {
    "torch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "seaborn",
    "PIL",
    "sklearn",
    "tqdm",
    "cv2",
    "skimage",
    "h5py",
    "yaml",
    "IPython",
    "unidecode",
}
_MAX_SIBLINGS = 200  # a folder of more files is not read for one load


@dataclass(frozen=True)
class CodeFacts:
    """What one file says about devices."""

    device_words: bool
    imports: frozenset[str]  # top-level module names; "." for a relative import
    saves: frozenset[str]  # file names `torch.save` writes, where written as one string
    loads: bool  # a `torch.load` (what it reads may be a GPU's, and be saved again)


def facts_of_source(source: str) -> Optional[CodeFacts]:
    """None where the source cannot be parsed."""
    try:
        tree = parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    imports: set[str] = set()
    saves: set[str] = set()
    loads = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.add("." if node.level else (node.module or "").partition(".")[0])
        elif isinstance(node, ast.Call):
            called = dotted_name(node.func) or ""
            loads = loads or called in ("torch.load", "load")
            if called in ("torch.save", "save"):
                target = node.args[1] if len(node.args) > 1 else keyword_value(node, "f")
                written = string_value(target) if target is not None else None
                if written:
                    saves.add(written)
    return CodeFacts(bool(DEVICE_WORDS.search(source)), frozenset(imports), frozenset(saves), loads)


def _digest_and_facts(path: str, data: bytes) -> tuple[str, Optional[CodeFacts]]:
    return bytes_digest(data), _read_facts(Path(path), data)


# The digest of a file's bytes and its facts (several loads, several linted files): one read
# serves both.
_facts_of_file = ByStamp(_digest_and_facts)


def _read_facts(path: Path, data: bytes) -> Optional[CodeFacts]:
    try:
        if path.suffix == NOTEBOOK_SUFFIX:
            source = parse_notebook(data).program().source
        else:
            source = data.decode("utf-8")
    except (UnicodeDecodeError, NotebookError):
        return None
    return facts_of_source(source)


class _Folder:
    """The scripts and notebooks of the linted file's folder, read on demand."""

    def __init__(self, linted: str) -> None:
        self.linted = linted
        self.path = Path(os.path.abspath(linted))
        self.folder = self.path.parent
        self._facts: dict[Path, Optional[CodeFacts]] = {}
        self._listed = False

    def _listing_read(self) -> None:
        """What the folder holds is evidence too: a file added later may use a device."""
        if not self._listed:
            folder = str(self.folder)
            record_dependency(self.linted, folder, "listing", listing_digest(folder))
            self._listed = True

    def siblings(self) -> Optional[list[Path]]:
        self._listing_read()
        try:
            found = sorted(
                entry
                for entry in self.folder.iterdir()
                if entry.suffix in CODE_SUFFIXES and entry != self.path and entry.is_file()
            )
        except OSError:
            return None
        return found if len(found) <= _MAX_SIBLINGS else None

    def facts(self, path: Path) -> Optional[CodeFacts]:
        if path not in self._facts:
            digest, self._facts[path] = _facts_of_file(str(path)) or ("-", None)
            record_dependency(self.linted, str(path), "content", digest)
        return self._facts[path]

    def cpu_only(self, facts: CodeFacts, seen: frozenset[Path] = frozenset()) -> bool:
        """No device word, and every import a known library or a CPU-only module beside."""
        if facts.device_words:
            return False
        for name in sorted(facts.imports - _LIBRARIES):
            module = self.folder / f"{name}.py"
            if module in seen:
                continue  # (a cycle proves nothing new)
            self._listing_read()
            if name == "." or not module.is_file():
                return False
            inner = self.facts(module)
            if inner is None or not self.cpu_only(inner, seen | {module}):
                return False
        return True


def saved_here_on_cpu(linted: str, source: str) -> bool:
    """Whether the file, and every module it imports, can place nothing on a device: what it
    saves holds CPU tensors only."""
    facts = facts_of_source(source)
    return facts is not None and _Folder(linted).cpu_only(facts)


def written_beside_on_cpu(linted: str, source: str, file_name: str) -> Optional[str]:
    """The script or notebook beside ``linted`` that saves ``file_name`` as written
    (`torch.save(rnn, "char-rnn.pt")`), where ``linted`` and every file of its folder can
    place nothing on a device and load nothing (a loaded checkpoint, saved again, may be a
    GPU's). None otherwise."""
    if not Path(linted).is_file():
        return None
    own = facts_of_source(source)
    if own is None or file_name in own.saves:
        return None  # (its own saves are the same-file evidence's business)
    folder = _Folder(linted)
    siblings = folder.siblings()
    if siblings is None or not folder.cpu_only(own):
        return None
    saver: Optional[str] = None
    for sibling in siblings:
        facts = folder.facts(sibling)
        if facts is None or facts.loads or not folder.cpu_only(facts):
            return None
        if file_name in facts.saves:
            saver = saver or sibling.name
    return saver
