from __future__ import annotations

import ast

from devlint.analysis.advice import enclosing_function
from devlint.analysis.operations import Citations
from devlint.analysis.parameters import assignments_of, passed_through
from devlint.analysis.syntax import argument
from devlint.analysis.syntax_screen import SyntaxFacts
from devlint.analysis.values import Kind, Value, Where
from devlint.context import NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import FlowRule, Invalid

_PACKING = frozenset(
    {
        "torch.nn.utils.rnn.pack_padded_sequence",
        "torch.nn.utils.rnn.pack_sequence",  # (its lengths are Python numbers: never flagged)
    }
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class PackedLengthsOnDevice(FlowRule):
    """
    ## What it does
    Flags `pack_padded_sequence(x, lengths)` where `lengths` is a tensor that may
    be on a GPU: moved there with `.to(device)` or `.cuda()`, or computed in the
    function from a tensor on the caller's device (`lengths =
    tokens.ne(pad).sum(1)` in `forward`, where `tokens` are the module's input).

    A `lengths` that the function only passes on (a parameter, `batch.lengths`,
    `lengths.long()`) is not flagged: callers keep lengths on the CPU on
    purpose, for this very call.

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
        # a mask's count, computed in the function from a tensor of its caller's
        Invalid(
            "import torch\nfrom torch.nn.utils import rnn\n"
            "def encode(lstm, embedded: torch.Tensor, mask: torch.Tensor):\n"
            "    return lstm(rnn.pack_padded_sequence(embedded, mask.sum(-1), batch_first=True))",
            4,
            52,
            "parameter `mask`",
        ),
    )

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        return facts.device_source or facts.forward_method or facts.tensor_parameter

    def visit_Call(self, node: ast.Call) -> None:
        qualified = self.analysis.names.qualified_syntax_name(node.func) or ""
        if qualified not in _PACKING:
            return
        lengths = argument(node, 1, "lengths")
        if lengths is None:
            return
        value = self.analysis.flow.value_of(lengths)
        if not self._may_be_on_gpu(value, lengths):
            return
        name = self.analysis.source_of(lengths)
        citations = Citations()
        evidence = citations.of(value.placement)
        if value.where is Where.MAYBE_DEVICE:
            evidence += ", on some paths"
        computed = self._computed_at(lengths)
        if value.where is Where.INPUT and computed is not None:
            evidence = f"computed at line {citations.line_of(computed)} from {evidence}"
        operand = name if isinstance(lengths, (ast.Name, ast.Attribute, ast.Call)) else f"({name})"
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
                if operand == name
                else (
                    NodeEdit.insert_before(lengths, "("),
                    NodeEdit.insert_after(lengths, ").cpu()"),
                ),
            ),
        )

    def _computed_at(self, lengths: ast.expr) -> ast.Assign | None:
        """The one assignment of the function that binds ``lengths``, a name."""
        function = enclosing_function(self.analysis.tree, lengths)
        if not isinstance(lengths, ast.Name) or not isinstance(function, _FUNCTIONS):
            return None
        bound = assignments_of(function, lengths.id)
        return bound[0] if len(bound) == 1 else None

    def _may_be_on_gpu(self, value: Value, lengths: ast.expr) -> bool:
        """Moved to a device, or computed here from a tensor on the caller's device: lengths
        the function only passes on are where its caller chose to keep them."""
        if value.kind is not Kind.TENSOR:
            return False
        if value.where in (Where.DEVICE, Where.MAYBE_DEVICE):
            return True
        if value.where is not Where.INPUT:
            return False
        function = enclosing_function(self.analysis.tree, lengths)
        return isinstance(function, _FUNCTIONS) and not passed_through(function, lengths)
