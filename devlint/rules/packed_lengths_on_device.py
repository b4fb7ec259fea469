from __future__ import annotations

import ast
from typing import Optional

from devlint.analysis.advice import enclosing_function
from devlint.analysis.derivation import latest_assignment, root_name
from devlint.analysis.operations import Citations
from devlint.analysis.syntax import argument
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.values import Kind, Where
from devlint.context import NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import FlowRule, Invalid

_PACKING = "torch.nn.utils.rnn.pack_padded_sequence"


class PackedLengthsOnDevice(FlowRule):
    """
    ## What it does
    Flags `pack_padded_sequence(x, lengths)` where `lengths` is a tensor that may
    be on a GPU: moved there with `.to(device)` or `.cuda()`, or computed in the
    function from the very tensor it packs, on the caller's device (`lengths =
    tokens.ne(pad).sum(1)` beside `self.embed(tokens)` in `forward`).

    Lengths that derive from anything else (a parameter, `batch.lengths`,
    `lengths.long().clamp(min=1)`, another tensor's count) are not flagged:
    callers keep lengths on the CPU on purpose, for this very call.

    ## Why is this bad?
    Since PyTorch 1.7, `pack_padded_sequence` takes its lengths as a 1-D CPU
    int64 tensor (or a list), and raises "'lengths' argument should be a 1D CPU
    int64 tensor, but got 1D cuda:0 Long tensor" otherwise. On a CPU-only
    machine the lengths are on the CPU already, so the bug waits for the first
    GPU run.

    ## Example
    ```python
    def forward(self, tokens):
        lengths = tokens.ne(0).sum(dim=1)
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True)
    ```

    ## Use instead
    ```python
    packed = pack_padded_sequence(self.embed(tokens), lengths.cpu(), batch_first=True)
    ```

    ## Fix safety
    `.cpu()` is inserted after the lengths: a **safe** fix, since `.cpu()` on a
    tensor already on the CPU returns it unchanged, and the packed sequence
    stays on the device of its data.
    """

    code = "DEV017"
    name = "packed-lengths-on-device"
    summary = "pack_padded_sequence given lengths that may be on a GPU"
    fixable = True
    trigger_tokens = ("pack_padded_sequence",)

    VALID = (
        # the lengths the caller passes: kept on the CPU for this call
        "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n    def forward(self, x, lengths):\n"
        "        return pack_padded_sequence(x, lengths, batch_first=True)",
        "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n    def forward(self, x, lengths):\n"
        "        lengths = lengths.long()\n"
        "        return pack_padded_sequence(x, lengths, batch_first=True)",
        # unpacked from what the caller passes
        "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n    def forward(self, batch):\n"
        "        x, lengths = batch\n"
        "        return pack_padded_sequence(x.float(), lengths, batch_first=True)",
        # derived from the caller's lengths, in two steps, or edited
        "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n    def forward(self, x, lens):\n"
        "        lengths = lens\n        lengths = lengths.long().clamp(min=1)\n"
        "        return pack_padded_sequence(x, lengths, batch_first=True)",
        # a count of another tensor of the caller's, which may live elsewhere
        "import torch\nfrom torch.nn.utils import rnn\n"
        "def encode(lstm, embedded: torch.Tensor, mask: torch.Tensor):\n"
        "    return lstm(rnn.pack_padded_sequence(embedded, mask.sum(-1), batch_first=True))",
        # the data cut to the caller's lengths; a nested function's own `lengths`
        "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n    def forward(self, x, lengths):\n"
        "        def count(mask):\n            lengths = mask.sum(1)\n            return lengths\n"
        "        x = x[:, : lengths.max()]\n"
        "        return pack_padded_sequence(x, lengths, batch_first=True)",
        # moved to the CPU first
        "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "class Encoder(nn.Module):\n    def forward(self, x):\n"
        "        lengths = (x != 0).sum(dim=1)\n"
        "        return pack_padded_sequence(x, lengths.cpu(), batch_first=True)",
        # a list of numbers
        "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "x = torch.zeros(2, 3, 4).cuda()\npacked = pack_padded_sequence(x, [3, 2])",
        # made on the CPU
        "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "x = torch.zeros(2, 3, 4).cuda()\n"
        "packed = pack_padded_sequence(x, torch.tensor([3, 2]), batch_first=True)",
    )
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n    def forward(self, tokens):\n"
            "        lengths = tokens.ne(0).sum(dim=1)\n"
            "        return pack_padded_sequence(tokens, lengths, batch_first=True)",
            7,
            45,
            "`lengths` may be on a GPU (computed at line 6 from input `tokens`)",
            fixed="import torch\nfrom torch import nn\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "class Encoder(nn.Module):\n    def forward(self, tokens):\n"
            "        lengths = tokens.ne(0).sum(dim=1)\n"
            "        return pack_padded_sequence(tokens, lengths.cpu(), batch_first=True)",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n"
            "x = torch.zeros(2, 3, 4).to(device)\nlengths = torch.tensor([3, 2]).to(device)\n"
            "packed = nn.utils.rnn.pack_padded_sequence(x, lengths=lengths, batch_first=True)",
            5,
            55,
            "moved to `device` at line 4",
        ),
        # computed on the spot from what is packed
        Invalid(
            "import torch\nfrom torch.nn.utils import rnn\n"
            "def encode(lstm, embedded: torch.Tensor):\n"
            "    used = embedded.abs().sum(-1) > 0\n"
            "    return lstm(rnn.pack_padded_sequence(embedded, used.sum(-1), batch_first=True))",
            5,
            52,
            "`used.sum(-1)` may be on a GPU (computed at line 5 from parameter `embedded`)",
            fixed="import torch\nfrom torch.nn.utils import rnn\n"
            "def encode(lstm, embedded: torch.Tensor):\n"
            "    used = embedded.abs().sum(-1) > 0\n"
            "    return lstm(rnn.pack_padded_sequence(embedded, used.sum(-1).cpu(), "
            "batch_first=True))",
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return facts.device_source or facts.forward_method or facts.tensor_parameter

    def visit_Call(self, node: ast.Call) -> None:
        qualified = self.analysis.names.qualified_syntax_name(node.func) or ""
        data = argument(node, 0, "input")
        lengths = argument(node, 1, "lengths")
        if qualified != _PACKING or data is None or lengths is None:
            return
        value = self.analysis.flow.value_of(lengths)
        if value.kind is not Kind.TENSOR:
            return
        citations = Citations()
        evidence = citations.of(value.placement)
        if value.where is Where.MAYBE_DEVICE:
            evidence += ", on some paths"
        elif value.where is Where.INPUT:
            computed = self._computed_beside(data, lengths)
            if computed is None:
                return
            evidence = f"computed at line {citations.line_of(computed)} from {evidence}"
        elif value.where is not Where.DEVICE:
            return
        name = self.analysis.source_of(lengths)
        simple = isinstance(lengths, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        operand = name if simple else f"({name})"
        self.report(
            lengths,
            f"`{name}` may be on a GPU ({evidence}) and `pack_padded_sequence` needs its "
            f"lengths on the CPU (a 1-D CPU int64 tensor, since PyTorch 1.7): pass "
            f"`{operand}.cpu()`",
            citations.cited(),
            RawFix(
                Applicability.SAFE,
                "Insert `.cpu()`",
                (NodeEdit.insert_after(lengths, ".cpu()"),)
                if simple
                else (
                    NodeEdit.insert_before(lengths, "("),
                    NodeEdit.insert_after(lengths, ").cpu()"),
                ),
            ),
        )

    def _computed_beside(self, data: ast.expr, lengths: ast.expr) -> Optional[ast.AST]:
        """Where the function computes ``lengths`` from the tensor it packs (`tokens.ne(0)
        .sum(1)` beside `self.embed(tokens)`): the lengths' assignment, or the lengths
        themselves. None where they derive from anything else (the caller's own lengths)."""
        function = enclosing_function(self.analysis.tree, lengths)
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        names = self.analysis.names
        root = root_name(function, lengths, names)
        if root is None or root != root_name(function, data, names):
            return None
        if isinstance(lengths, ast.Name):
            return latest_assignment(function, lengths)
        return lengths
