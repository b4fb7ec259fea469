"""Time `devlint server` from a change to its diagnostics, through a real LSP client.

    python bench/lsp_latency.py [--rounds N] [--large PATH]

Starts `devlint server` with pygls's client (the one editors' plugins in Python use), opens
two files, and edits each again and again: a generated ~1,000-line training script and a large
file of PyTorch's own source (default: `torch/nn/functional.py`). Each edit changes one line in
the middle of the file (adding or removing a `.cuda()` call); the time runs from sending
`textDocument/didChange` to the `publishDiagnostics` of that version. It prints the median and
the spread, with the CLI's time on the same files (`devlint check FILE --no-cache`, a fresh
process each time, so it pays Python's start and devlint's imports as a pre-commit hook does).

Beside wall-clock times it prints CPU times (the server's, read from /proc, and the engine's
in process), which do not grow with the machine's load as wall-clock times do.

Goal: median at most 100 ms for the script and 300 ms for the large file. Nothing here is a
test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

REPO = Path(__file__).resolve().parent.parent

_BLOCK = '''
class Block{n}(nn.Module):
    """Residual block {n}."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.register_buffer("scale", torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(self.norm(x))
        h = torch.nn.functional.gelu(h)
        return x + self.down(h) * self.scale


def evaluate_{n}(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for inputs, labels in loader:
            inputs, labels = inputs.to(device), labels.to(device)
            logits = model(inputs)
            total += torch.nn.functional.cross_entropy(logits, labels).item()
            count += 1
    return total / max(count, 1)

'''

_MAIN = """
def train(epochs: int = 3) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(*[Block0() for _ in range(4)]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(256, 64), torch.randint(0, 64, (256,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    for epoch in range(epochs):
        model.train()
        for inputs, labels in loader:
            inputs = inputs.to(device)
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs), labels.to(device))
            loss.backward()
            optimizer.step()
        print(epoch, evaluate_0(model, loader, device))
    torch.save(model.state_dict(), "model.pt")
    state = torch.load("model.pt")
    model.load_state_dict(state)
EDIT_LINE = 0


if __name__ == "__main__":
    train()
"""


def training_script(lines: int = 1000) -> str:
    """A training script of about ``lines`` lines: blocks, evaluation helpers, a loop."""
    header = "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader"
    header += ", TensorDataset\n\n"
    parts = [header]
    count = 0
    while sum(part.count("\n") for part in parts) < lines - _MAIN.count("\n"):
        parts.append(_BLOCK.format(n=count))
        count += 1
    parts.append(_MAIN)
    return "".join(parts)


def _edit_row(text: str) -> int:
    """The row to edit: the middle of the file, at a top-level statement's indentation."""
    lines = text.splitlines()
    middle = len(lines) // 2
    for row in range(middle, len(lines)):
        if lines[row] == "" and (row + 1 == len(lines) or not lines[row + 1].startswith(" ")):
            return row
    return len(lines) - 1


_TYPED = "torch.zeros(2).cuda()"


class Timer:
    def __init__(self) -> None:
        self.client = LanguageClient("devlint-bench", "1")
        self.arrived: dict[tuple[str, int], float] = {}
        self.waiting: dict[tuple[str, int], asyncio.Event] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version or 0)
            self.arrived[key] = time.perf_counter()
            event = self.waiting.get(key)
            if event is not None:
                event.set()

    async def start(self, root: Path) -> None:
        await self.client.start_io(sys.executable, "-m", "devlint.cli", "server", cwd=str(REPO))
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(root))
            )
        )
        self.client.initialized(types.InitializedParams())

    async def _wait(self, uri: str, version: int) -> float:
        event = self.waiting.setdefault((uri, version), asyncio.Event())
        await asyncio.wait_for(event.wait(), timeout=120)
        return self.arrived[(uri, version)]

    def server_cpu(self) -> float:
        """The server process's CPU seconds so far (all its threads), where /proc has them:
        unlike wall-clock time, it does not grow with the machine's load."""
        server = self.client._server
        try:
            fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (AttributeError, OSError):
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def measure(self, path: Path, text: str, rounds: int) -> tuple[list[float], list[float]]:
        uri = from_fs_path(str(path))
        assert uri is not None
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )
        await self._wait(uri, 1)  # the first lint imports and builds the rules: not timed
        row = _edit_row(text)
        timings, cpu = [], []
        for version in range(2, rounds + 2):
            # Even versions type a bug on the empty line; odd ones delete it again.
            typing = version % 2 == 0
            end = 0 if typing else len(_TYPED)
            change = types.TextDocumentContentChangePartial(
                range=types.Range(
                    start=types.Position(line=row, character=0),
                    end=types.Position(line=row, character=end),
                ),
                text=_TYPED if typing else "",
            )
            self.waiting[(uri, version)] = asyncio.Event()
            sent, cpu_before = time.perf_counter(), self.server_cpu()
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[change],
                )
            )
            timings.append(await self._wait(uri, version) - sent)
            cpu.append(self.server_cpu() - cpu_before)
        return timings, cpu

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def cli_times(path: Path, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "devlint.cli", "check", str(path), "--no-cache", "-q"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        times.append(time.perf_counter() - start)
    return times


def engine_times(path: Path, text: str, rounds: int) -> tuple[list[float], list[float]]:
    """The engine alone, in this process, on the same text (warm): what the server cannot
    go below."""
    from devlint.server.session import LintSession, ServerSettings

    session = LintSession(ServerSettings(), path.parent)
    session.lint(path, text)
    times, cpu = [], []
    for _ in range(rounds):
        start, cpu_start = time.perf_counter(), time.process_time()
        session.lint(path, text)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return times, cpu


def _ms(values: list[float]) -> str:
    low, high = min(values) * 1000, max(values) * 1000
    return f"median {statistics.median(values) * 1000:7.0f} ms  (min {low:.0f}, max {high:.0f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="edits per file (default 10)")
    parser.add_argument("--cli-rounds", type=int, default=3, help="CLI runs per file")
    parser.add_argument("--large", type=Path, help="the large file (default: torch's functional)")
    args = parser.parse_args()
    if args.large is None:
        import torch  # only to find its source

        args.large = Path(torch.__file__).parent / "nn" / "functional.py"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
        script = root / "train.py"
        script.write_text(training_script(), encoding="utf-8")
        large = root / args.large.name
        large.write_text(args.large.read_text(encoding="utf-8"), encoding="utf-8")
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"{os.cpu_count()} CPUs, load average {load}")
        timer = Timer()
        await timer.start(root)
        goals = {script: 0.100, large: 0.300}
        try:
            for path, goal in goals.items():
                text = path.read_text(encoding="utf-8")
                lines = text.count("\n")
                timings, server_cpu = await timer.measure(path, text, args.rounds)
                engine, engine_cpu = engine_times(path, text, args.rounds)
                cli = cli_times(path, args.cli_rounds)
                verdict = "meets" if statistics.median(timings) <= goal else "misses"
                print(f"{path.name} ({lines} lines)")
                print(f"  server, change to diagnostics: {_ms(timings)}; {verdict} the goal "
                      f"of {goal * 1000:.0f} ms")  # fmt: skip
                print(f"  server CPU time per change:    {_ms(server_cpu)}")
                print(f"  engine alone, in process:      {_ms(engine)}")
                print(f"  engine alone, CPU time:        {_ms(engine_cpu)}")
                print(f"  CLI, devlint check --no-cache: {_ms(cli)}")
        finally:
            await timer.stop()


if __name__ == "__main__":
    asyncio.run(main())
