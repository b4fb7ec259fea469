"""What the virtual GPU costs: the same training loop on the CPU and on ``vgpu``.

    python bench/vgpu_overhead.py [--steps N] [--width W] [--batch B] [--repeats R]

Each side runs in its own process (the virtual GPU changes a process for good), with one torch
thread so that the figures are steadier on a shared machine. For each, the loop's wall-clock
time per step and its CPU time per step (the smaller of ``--repeats`` runs, after a warm-up),
and whether the losses are bit-identical. The ratio vgpu / cpu is the overhead: the virtual GPU
adds a Python dispatch per operator, so it is largest for small tensors. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

_LOOP = textwrap.dedent(
    """
    import json, sys, time
    import torch
    from torch import nn

    side, steps, width, batch, repeats = sys.argv[1], *map(int, sys.argv[2:6])
    if side == "vgpu":
        from devlint.runtime import vgpu
        vgpu.install()
    torch.set_num_threads(1)
    device = torch.device("cuda" if side == "vgpu" else "cpu")

    def run(count):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, 10),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = torch.randn(batch, width).to(device)
        y = torch.randint(0, 10, (batch,)).to(device)
        losses = []
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return time.perf_counter() - wall, time.process_time() - cpu, losses

    run(3)  # warm-up: first calls, lazy imports
    best = min((run(steps) for _ in range(repeats)), key=lambda r: r[1])
    print(json.dumps({"wall": best[0] / steps, "cpu": best[1] / steps, "losses": best[2]}))
    """
)


def measure(side: str, args: argparse.Namespace) -> dict[str, object]:
    command = [sys.executable, "-c", _LOOP, side]
    command += [str(v) for v in (args.steps, args.width, args.batch, args.repeats)]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cpu, vgpu = measure("cpu", args), measure("vgpu", args)
    print(f"MLP {args.width} wide, batch {args.batch}, {args.steps} Adam steps, one thread")
    for name, side in (("cpu", cpu), ("vgpu", vgpu)):
        wall, cpu_time = float(side["wall"]), float(side["cpu"])  # type: ignore[arg-type]
        print(f"  {name:<5} {wall * 1e3:8.3f} ms/step wall  {cpu_time * 1e3:8.3f} ms/step CPU")
    ratio_wall = float(vgpu["wall"]) / float(cpu["wall"])  # type: ignore[arg-type]
    ratio_cpu = float(vgpu["cpu"]) / float(cpu["cpu"])  # type: ignore[arg-type]
    print(f"  vgpu / cpu: {ratio_wall:.2f}x wall, {ratio_cpu:.2f}x CPU")
    print(f"  losses bit-identical: {vgpu['losses'] == cpu['losses']}")


if __name__ == "__main__":
    main()
