"""Which one-line changes are device fixes: the miner's matching, kept apart so tests can read it.

A removed line and the added line that replaces it are compared with all whitespace removed. Most
device fixes are a pure insertion (``torch.zeros(n)`` -> ``torch.zeros(n, device=x.device)``): the
two lines are equal once the inserted text is taken out, and the inserted text says which kind of
fix it was. A few are replacements of a known shape (``.cuda()`` -> ``.to(device)``,
``self.mask = t`` -> ``self.register_buffer("mask", t)``, a deprecated name for its successor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# Each category names the device rules whose finding on the pre-fix line counts as a hit.
CATEGORY_CODES: dict[str, tuple[str, ...]] = {
    "factory-device": ("DEV005", "DEV006"),
    "missing-move": ("DEV005", "DEV006"),
    "discarded-move": ("DEV004",),
    "buffer": ("DEV009",),
    "map-location": ("DEV008",),
    "numpy-cpu": ("DEV007",),
    "unguarded-cuda": ("DEV001",),
    "deprecated-api": ("DEV002",),
    "optimizer-move": ("DEV003",),
    "ordinal": ("DEV010",),
}

# Tensor factories that take `device=` (torch's own creation functions and the `new_*` methods'
# plain counterparts); a factory gaining `device=` is the commonest library device fix.
_FACTORIES = (
    "zeros|ones|empty|full|arange|range|linspace|logspace|eye|rand|randn|randint|randperm|"
    "tensor|as_tensor|from_numpy|zeros_like|ones_like|empty_like|full_like|rand_like|"
    "randn_like|randint_like|tril_indices|triu_indices|normal|bernoulli|multinomial|"
    "LongTensor|FloatTensor|BoolTensor|ByteTensor|Tensor|empty_strided|scalar_tensor|"
    "complex|polar|hann_window|hamming_window|blackman_window|kaiser_window|bartlett_window"
)
_FACTORY_CALL = re.compile(rf"\b(?:torch\.|th\.)?(?:{_FACTORIES})\(")
# A device argument that says where to go: a device, a GPU, or another tensor's placement. A
# `.to(torch.float32)` or `.to(x.dtype)` is a dtype conversion and no device fix.
_DEVICE_WORD = re.compile(r"device|cuda|gpu|dev\b|dev[_)]|\brank\b|local_rank|accelerator|mps|xpu")
_CPU_ONLY = re.compile(r"""^device=(?:["']cpu["']|torch\.device\(["']cpu["']\))$""")
_DEPRECATED_RENAMES = (
    ("memory_cached", "memory_reserved"),
    ("max_memory_cached", "max_memory_reserved"),
    ("reset_max_memory_cached", "reset_peak_memory_stats"),
    ("torch.cuda.amp.autocast", "torch.amp.autocast"),
    ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler"),
    ("cuda.amp.autocast", "amp.autocast"),
    ("cuda.amp.GradScaler", "amp.GradScaler"),
    ("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd"),
    ("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd"),
)
_BUFFER_BEFORE = re.compile(r"^self\.(?P<name>\w+)(?::[^=]+)?=(?P<value>.+)$")
_BUFFER_AFTER = re.compile(
    r"""^self\.register_buffer\(["'](?P<name>\w+)["'],(?P<value>.+?)(?:,persistent=\w+)?\)$"""
)
_DISCARDED_BEFORE = re.compile(r"^(?P<target>[\w.\[\]'\"]+)\.(?:to|cuda|cpu)\(.*\)$")
_CUDA_ORDINAL = re.compile(r"""["']cuda:\d+["']|\.cuda\(\d+\)|torch\.device\(["']cuda["'],\d+\)""")


@dataclass(frozen=True)
class Match:
    """A device fix recognised in one line pair."""

    category: str
    inserted: str


def squeeze(line: str) -> str:
    """The line without any whitespace, the form in which lines are compared."""
    return "".join(line.split())


def insertions(before: str, after: str) -> list[tuple[int, str]]:
    """Every way ``after`` is ``before`` (both squeezed) with one run of text inserted.

    An insertion can often be placed at several positions (``x.numpy()`` -> ``x.cpu().numpy()``
    inserts ``.cpu()`` after ``x`` or ``cpu().`` after ``x.``); each is returned, leftmost first.
    """
    if len(after) <= len(before):
        return []
    prefix = 0
    while prefix < len(before) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < len(before) and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]
    ):
        suffix += 1
    width = len(after) - len(before)
    first = max(0, len(before) - suffix)
    return [(at, after[at : at + width]) for at in range(first, prefix + 1)]


def is_code_line(line: str) -> bool:
    """Whether a line is code rather than a comment, a docstring line or a blank."""
    text = line.strip()
    return (
        bool(text)
        and not text.startswith(("#", '"""', "'''", ">>>", "..."))
        and (not text.startswith(("'", '"')) or text.endswith(","))
    )


def classify(
    before_line: str, after_line: str, subject: str = "", path: str = ""
) -> Optional[Match]:
    """The device fix that turns ``before_line`` into ``after_line``, or None; the commit's
    ``subject`` and the file's ``path`` reject the shapes that reading found to be no fix."""
    if not (is_code_line(before_line) and is_code_line(after_line)):
        return None
    before, after = squeeze(before_line), squeeze(after_line)
    if before == after:
        return None
    match = _by_insertion(before, after) or _by_replacement(before, after)
    if match is None or rejection(match, before_line.strip(), subject, path):
        return None
    return match


# A test moved to another accelerator: it was already limited to CUDA, so nothing was broken.
_PORTING_SUBJECT = re.compile(
    r"xpu|npu|mlu|hpu|ascend|musa|\bmps\b|device[- ]agnostic|accelerator", re.IGNORECASE
)
# A refactor that threads a device argument through constructors (meta-device init, `dd`).
_DEVICE_ARGUMENT_SUBJECT = re.compile(
    r"factory.?kwargs|\bdd\b|device (?:argument|arg|kwarg)", re.IGNORECASE
)
# Tests made to run on every device ("adds available_device to test_x.py"): they ran on the CPU
# alone before, so the `.cpu()` and `device=` they gain fix nothing.
_TEST_PARAMETRISATION_SUBJECT = re.compile(
    r"available_device|device[- ]agnostic|device allocation", re.IGNORECASE
)
# Objects whose `.to()`/`.cpu()` works in place: a statement move on them discards nothing.
_IN_PLACE_MOVERS = re.compile(r"pipe|renderer|result|model|module|net\b", re.IGNORECASE)
# `scaler (torch.cuda.amp.GradScaler): ...`: a docstring's parameter line.
_DOCSTRING_PARAMETER = re.compile(r"^\w+ \(.*\)(?:, optional)?:")


def is_test_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "/tests/" in f"/{path}" or "/test/" in f"/{path}" or name.startswith("test_")


def rejection(match: Match, before: str, subject: str, path: str) -> Optional[str]:
    """Why a recognised shape is no device fix in this commit, or None."""
    squeezed = squeeze(before)
    category = match.category
    ported = is_test_path(path) and bool(_PORTING_SUBJECT.search(subject))
    if category in ("unguarded-cuda", "ordinal") and ported:
        return "a guarded test ported to another accelerator"
    if category == "ordinal" and not re.search(r"[1-9]\d*", match.inserted.split(":")[-1]):
        return "GPU 0 is no hard-coded ordinal"
    if category == "factory-device":
        if _DEVICE_ARGUMENT_SUBJECT.search(subject):
            return "a device argument threaded through constructors"
        if re.search(r"_like\(|Parameter\(|register_buffer\(", squeezed):
            return "a `*_like` factory, a parameter or a buffer: placed by its owner"
    if "available_device" in match.inserted or (
        is_test_path(path) and _TEST_PARAMETRISATION_SUBJECT.search(subject)
    ):
        return "a test given a device parameter"
    if category == "missing-move":
        if match.inserted == ".cuda()" and squeezed.endswith("Loss()"):
            return "a loss without weights holds no tensor"
        if "from_pretrained(" in squeezed and is_test_path(path):
            return "a test model moved together with its inputs"
    if category == "discarded-move" and _IN_PLACE_MOVERS.search(match.inserted):
        return "`.to()` of a pipeline, container or module works in place"
    if category == "deprecated-api" and (
        _in_quotes(before, match.inserted.split(".")[-1])
        or _DOCSTRING_PARAMETER.match(before)
        or "patch(" in squeezed
    ):
        return "a name in a string, a docstring or a mock target"
    return None


def _in_quotes(line: str, word: str) -> bool:
    """Whether the first deprecated name near ``word`` in ``line`` sits inside quotes."""
    index = line.find(word.replace("reserved", "cached").replace("torch.amp", "torch.cuda.amp"))
    index = index if index >= 0 else line.find("cuda")
    head = line[: max(index, 0)]
    return any(head.count(quote) % 2 == 1 for quote in ('"', "'", "`"))


def _by_insertion(before: str, after: str) -> Optional[Match]:
    for at, inserted in insertions(before, after):
        match = _inserted_fix(before, at, inserted)
        if match:
            return match
    return None


def _inserted_fix(before: str, at: int, inserted: str) -> Optional[Match]:
    head, tail = before[:at], before[at:]
    if "map_location" in inserted and "load(" in before:
        return Match("map-location", inserted)
    if _inserts_device_keyword(inserted) and _FACTORY_CALL.search(head):
        device_argument = inserted.strip(",")
        if _CPU_ONLY.match(device_argument) or not tail.startswith((")", ",")):
            return None
        return Match("factory-device", inserted)
    if re.fullmatch(r"(?:\.detach\(\))?\.cpu\(\)(?:\.detach\(\))?", inserted):
        if tail.startswith(".numpy(") or _inside_numpy_call(head):
            return Match("numpy-cpu", inserted)
        return Match("missing-move", inserted) if _is_operand_end(head) else None
    if inserted == ".cuda()" or re.fullmatch(r"\.type_as\([\w.\[\]]+\)", inserted):
        return Match("missing-move", inserted) if _is_operand_end(head) else None
    if re.fullmatch(r"\.to\(.+\)", inserted) and _DEVICE_WORD.search(inserted):
        if not _balanced(inserted) or not _is_operand_end(head):
            return None
        return Match("missing-move", inserted)
    target = _DISCARDED_BEFORE.match(before)
    if at == 0 and target and inserted == f"{target['target']}=":
        return Match("discarded-move", inserted)
    if "is_available()" in inserted and ".cuda(" in before:
        return Match("unguarded-cuda", inserted)
    return None


def _by_replacement(before: str, after: str) -> Optional[Match]:
    buffer_before, buffer_after = _BUFFER_BEFORE.match(before), _BUFFER_AFTER.match(after)
    if (
        buffer_before
        and buffer_after
        and (buffer_before["name"], buffer_before["value"])
        == (buffer_after["name"], buffer_after["value"])
    ):
        return Match("buffer", "register_buffer")
    if ".cuda()" in before and before.count(".cuda()") == 1:
        for candidate in re.finditer(r"\.to\(([^()]*(?:\([^()]*\))?)\)", after):
            replaced = before.replace(".cuda()", candidate.group(0), 1)
            if replaced == after and _DEVICE_WORD.search(candidate.group(1)):
                return Match("unguarded-cuda", candidate.group(0))
    for old, new in _DEPRECATED_RENAMES:
        if old in before and before.replace(old, new) == after:
            return Match("deprecated-api", new)
    ordinal = _CUDA_ORDINAL.search(before)
    if ordinal and ordinal.group(0) not in after and _replaces_span(before, after, ordinal):
        return Match("ordinal", ordinal.group(0))
    return None


def _replaces_span(before: str, after: str, span: re.Match[str]) -> bool:
    """Whether ``after`` differs from ``before`` only inside ``span`` (an ordinal's text)."""
    head, tail = before[: span.start()], before[span.end() :]
    if not (after.startswith(head) and after.endswith(tail)):
        return False
    replacement = after[len(head) : len(after) - len(tail)]
    if re.search(r"cuda:[1-9]|\.cuda\([1-9]|[\"'],[1-9]", replacement):
        return False  # another GPU of index 1 or more: still hard-coded
    return bool(_DEVICE_WORD.search(replacement)) or replacement in {'"cuda"', "'cuda'", ".cuda()"}


def _inside_numpy_call(head: str) -> bool:
    """Whether the innermost call still open at the end of ``head`` is a numpy function."""
    depth = 0
    for index in range(len(head) - 1, -1, -1):
        depth += head[index] in ")]}"
        depth -= head[index] in "([{"
        if depth < 0:
            return head[index] == "(" and bool(re.search(r"\b(?:np|numpy)\.\w+$", head[:index]))
    return False


def _inserts_device_keyword(inserted: str) -> bool:
    return bool(re.fullmatch(r",device=.+|device=.+,", inserted)) and _balanced(inserted)


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _is_operand_end(head: str) -> bool:
    """Whether the text before an inserted move ends an expression (a name, call or subscript)."""
    return bool(head) and (head[-1].isalnum() or head[-1] in "_)]")
