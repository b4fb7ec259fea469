"""The device-flow rules on the shapes real training code takes, buggy and correct."""

from __future__ import annotations

import pytest

from tests.helpers import lint_snippet

FLOW_RULES = {"DEV004", "DEV005", "DEV006", "DEV007", "DEV009", "DEV010"}
HEADER = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    "from torch.utils.data import DataLoader\n"
)


def flow_findings(body: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of the flow findings, lines counted from the body's first line."""
    offset = HEADER.count("\n")
    findings = lint_snippet(HEADER + body, FLOW_RULES)
    return [(f.code, f.start.row - offset, f.start.column) for f in findings]


BUGGY = {
    "script forgets the labels": (
        """\
model = nn.Linear(10, 2).to(device)
criterion = nn.CrossEntropyLoss()
loader = DataLoader(dataset, batch_size=32)
for inputs, labels in loader:
    inputs = inputs.to(device)
    loss = criterion(model(inputs), labels)
""",
        [("DEV005", 6, 37)],
    ),
    "train function forgets the inputs": (
        """\
def train(model, loader, optimizer, device):
    model.to(device)
    for data, target in loader:
        target = target.to(device)
        output = model(data)
        loss = F.cross_entropy(output, target)
""",
        [("DEV005", 5, 24)],
    ),
    "trainer class forgets the batch": (
        """\
class Trainer:
    def __init__(self, model, train_loader, device):
        self.device = device
        self.model = model.to(device)
        self.train_loader = train_loader

    def train_epoch(self):
        for x, y in self.train_loader:
            logits = self.model(x)
""",
        [("DEV005", 9, 33)],
    ),
    "batch unpacked from the loader": (
        """\
model = nn.Sequential(nn.Linear(4, 4)).cuda()
for batch in DataLoader(ds):
    x, y = batch
    out = model(x)
""",
        [("DEV005", 4, 17)],
    ),
    "dict batch": (
        """\
model = nn.Linear(8, 2)
model.to(device)
for batch in DataLoader(ds):
    ids = batch["input_ids"]
    out = model(ids)
""",
        [("DEV005", 5, 17)],
    ),
    "enumerate over the loader": (
        """\
model = nn.Linear(8, 2).to(device)
for step, (x, y) in enumerate(DataLoader(ds)):
    out = model(x.to(device))
    loss = F.mse_loss(out, y)
""",
        [("DEV005", 4, 28)],
    ),
    "lightning module creating a CPU mask in forward": (
        """\
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x):
        hidden = self.layer(x)
        noise = torch.randn(8)
        return hidden + noise
""",
        [("DEV005", 8, 17)],
    ),
    "evaluation converts module output to numpy": (
        """\
model = nn.Linear(8, 2).to(device)
with torch.no_grad():
    for x, _ in DataLoader(ds):
        preds = model(x.to(device)).argmax(dim=1)
        all_preds = preds.numpy()
""",
        [("DEV007", 5, 21)],
    ),
    "accumulator left on the CPU": (
        """\
model = nn.Linear(8, 2).to(device)
total = torch.zeros(2)
for x, _ in DataLoader(ds):
    total += model(x.to(device)).sum(0)
""",
        [("DEV006", 2, 9)],
    ),
    "helper returns moved tensors": (
        """\
def to_device(x, y):
    return x.to(device), y.to(device)

features = torch.randn(4, 8)
inputs, targets = to_device(features, torch.zeros(4))
result = inputs @ torch.randn(8, 2)
""",
        [("DEV006", 6, 10)],
    ),
    "buffer kept as a plain attribute": (
        """\
class Positional(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.table = torch.randn(size, 16)

    def forward(self, x):
        return x + self.table
""",
        [("DEV009", 4, 9)],
    ),
    "discarded move inside a loop": (
        """\
for images, labels in DataLoader(ds):
    images.to(device)
""",
        [("DEV004", 2, 5)],
    ),
    # Loops to a fixpoint: what an iteration leaves is seen at the start of the next.
    "value from the previous iteration": (
        """\
model = nn.Linear(8, 8).to(device)
for step, (x, _) in enumerate(DataLoader(ds)):
    if step > 0:
        delta = previous - torch.zeros(8)
    previous = model(x.to(device))
""",
        [("DEV006", 4, 17)],
    ),
    # Containers keep their elements' placements.
    "numpy stacks a list of device outputs": (
        """\
import numpy as np
model = nn.Linear(8, 2).to(device)
outputs = []
for x, _ in DataLoader(ds):
    outputs.append(model(x.to(device)).detach())
stacked = np.stack(outputs)
""",
        [("DEV007", 6, 20)],
    ),
    "object whose to() moves its attributes": (
        """\
graph = Data()
graph.x = torch.randn(4, 3)
graph = graph.to(device)
out = graph.x + torch.randn(4, 3)
""",
        [("DEV006", 4, 7)],
    ),
    # Calls carry placements.
    "helper called with CPU data and a moved model": (
        """\
def score(net, features, targets):
    out = net(features)
    return F.cross_entropy(out, targets)

net = nn.Linear(3, 3).to(device)
features = torch.randn(4, 3)
result = score(net, features, torch.zeros(4).long())
""",
        [("DEV005", 7, 21), ("DEV005", 7, 31)],
    ),
    "helper two calls deep": (
        """\
def predict(net, inputs):
    return net(inputs)

def evaluate(net, inputs):
    return predict(net, inputs).argmax(1)

net = nn.Linear(3, 3).cuda()
labels = evaluate(net, torch.randn(4, 3))
""",
        [("DEV005", 8, 24)],
    ),
    "evaluator sees what its construction site passed": (
        """\
class Evaluator:
    def __init__(self, model, data):
        self.model = model
        self.data = data

    def run(self):
        return self.model(self.data)

net = nn.Linear(3, 3).to(device)
evaluator = Evaluator(net, torch.randn(4, 3))
""",
        [("DEV005", 7, 27)],
    ),
    "helper default device used where the call leaves it out": (
        """\
def sample(n, k, device="cuda"):
    return torch.randint(0, n, (k,), device=device)

idx = sample(10, 3)
shifted = torch.arange(10) + idx
""",
        [("DEV006", 5, 11)],
    ),
    # Evidence-based kinds.
    "discarded move beside a sibling moved properly": (
        """\
for a, b in pairs:
    a = a.to(dev)
    b.to(dev)
""",
        [("DEV004", 3, 5)],
    ),
    "discarded move of a name an isinstance test proved a tensor": (
        """\
def preprocess(image):
    return 2.0 * torch.from_numpy(image) - 1.0

def run(pipe, image, device):
    if not isinstance(image, torch.Tensor):
        image = preprocess(image)
    image.to(device)
    return pipe(image)
""",
        [("DEV004", 7, 5)],
    ),
    # The classic misses of issue 14.
    "placement kept through arithmetic and methods": (
        """\
model = nn.Linear(8, 2).to(device)
freqs = [1.0, 2.0]
w = torch.tensor(freqs) * 2.0
scores = model(x.to(device))
out = scores + w.sqrt()
""",
        [("DEV006", 3, 5)],
    ),
    "CPU table indexed with a device index": (
        """\
model = nn.Linear(8, 4).to(device)
table = torch.randn(4, 16)
ids = model(x.to(device)).argmax(-1)
rows = table[ids]
""",
        [("DEV006", 2, 9)],
    ),
    "CPU accumulator of a module's parameters": (
        """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def l2(self):
        total = torch.zeros(())
        for p in self.parameters():
            total += p.pow(2).sum()
        return total
""",
        [("DEV005", 7, 17)],
    ),
    "positions made in forward for a submodule": (
        """\
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.step_embedding = nn.Embedding(64, 8)

    def forward(self, x):
        seq_len = x.size(1)
        steps = torch.arange(seq_len)
        return x + self.step_embedding(steps)
""",
        [("DEV005", 9, 40)],
    ),
    "noise from a helper method, scaled by a number the module keeps": (
        """\
class StatisticsPooling(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=1)
        mean += self._noise(mean.size())
        return mean

    def _noise(self, shape):
        noise = torch.randn(shape)
        return self.eps * ((1 - 9) * noise + 9)
""",
        [("DEV005", 12, 17)],
    ),
    "statistics of each item of an input, stacked": (
        """\
class Pooling(nn.Module):
    def forward(self, x, lengths):
        means = []
        for i in range(x.shape[0]):
            means.append(torch.mean(x[i, : int(lengths[i])], dim=0))
        means = torch.stack(means)
        return means + torch.randn(means.shape)
""",
        [("DEV005", 7, 24)],
    ),
    "indices from torch.where joined with a CPU index": (
        """\
def last_token(ids: torch.Tensor, token: int):
    rows, cols = torch.where(ids == token)
    return torch.cat((cols, torch.tensor([ids.shape[-1]])))
""",
        [("DEV005", 3, 29)],
    ),
    "nonzero's index tensor on a device, added to a CPU range": (
        """\
x = torch.randn(3, 3).to(device)
idx = torch.nonzero(x > 0)
y = torch.arange(10) + idx.sum(1)
""",
        [("DEV006", 3, 5)],
    ),
    "indices from nonzero as a tuple added to a CPU tensor": (
        """\
def shifted(ids: torch.Tensor):
    rows, cols = (ids > 0).nonzero(as_tuple=True)
    return rows + torch.arange(rows.shape[0])
""",
        [("DEV005", 3, 19)],
    ),
    "a helper's device left at None": (
        """\
def base_grid(height, width, device=None):
    return torch.zeros(height, width, 2, device=device)

def warp(image: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    grid = base_grid(image.shape[-2], image.shape[-1])
    return grid + flow
""",
        [("DEV005", 5, 12)],
    ),
    "a helper's move to a device left at None": (
        """\
def prepare(values, device=None):
    return torch.as_tensor(values).to(device)

def shift(x: torch.Tensor):
    return x + prepare([1.0, 2.0])
""",
        [("DEV005", 2, 12)],
    ),
    "a functional layer given a CPU sampling grid": (
        """\
def resample(x: torch.Tensor) -> torch.Tensor:
    grid = torch.zeros(1, 4, 4, 2)
    return F.grid_sample(x, grid, align_corners=False)
""",
        [("DEV005", 2, 12)],
    ),
    "a meshgrid of CPU ranges, unpacked and stacked": (
        """\
def add_coordinates(x: torch.Tensor) -> torch.Tensor:
    h, w = x.shape[-2:]
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return x + torch.stack([xs, ys]).float()
""",
        [("DEV005", 3, 29)],
    ),
    "a CPU table indexed with the caller's indices": (
        """\
def lookup(ids: torch.Tensor) -> torch.Tensor:
    table = torch.arange(10) * 2
    return table[ids]
""",
        [("DEV005", 2, 13)],
    ),
    "a CPU range shifted by a size parameter, divided by the caller's tensor": (
        """\
def gaussian(sigma: torch.Tensor, size: int) -> torch.Tensor:
    x = torch.arange(size) - size // 2
    return torch.exp(-(x**2) / (2 * sigma**2))
""",
        [("DEV005", 2, 9)],
    ),
    "a CPU system solved against the caller's tensor": (
        """\
def fit(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    A = torch.zeros(src.shape[0], 8, 8)
    return torch.linalg.solve(A, dst.view(-1, 8, 1))
""",
        [("DEV005", 2, 9)],
    ),
    "noise sampled around CPU means": (
        """\
def step(state: torch.Tensor) -> torch.Tensor:
    noise = torch.normal(torch.zeros(state.shape), 1.0)
    return state + noise
""",
        [("DEV005", 2, 26)],
    ),
    "the rows of a moved tensor, each added to a CPU tensor": (
        """\
x = torch.randn(4, 3).to(device)
for row in x:
    print(row + torch.ones(3))
""",
        [("DEV006", 3, 11)],
    ),
    "a forward input unpacked, a copy of its first item scaled by CPU noise": (
        """\
class AddNoise(nn.Module):
    def forward(self, inputs):
        clean, lengths = inputs
        noisy = clean.clone()
        noisy *= torch.rand(len(clean), 1)
        return noisy
""",
        [("DEV005", 5, 18)],
    ),
    "the indices of a moved token mask joined with a CPU index": (
        """\
def encode(tokenizer, prompt, device, marker):
    ids = tokenizer(prompt, return_tensors="pt").input_ids.to(device)
    rows, cols = torch.where(ids == marker)
    return torch.cat((rows, torch.tensor([0])))
""",
        [("DEV006", 4, 12)],
    ),
    "a CPU vector meets a 0-dim reduction of the input": (
        """\
class Centered(nn.Module):
    def forward(self, x):
        return torch.ones(3, 1) - x.mean()
""",
        [("DEV005", 3, 16)],
    ),
}


@pytest.mark.parametrize("case", sorted(BUGGY))
def test_buggy_training_code_is_reported(case: str) -> None:
    body, expected = BUGGY[case]
    assert flow_findings(body) == expected


CORRECT = [
    # Scripts that move everything.
    "model = nn.Linear(3, 2).to(device)\nx = torch.randn(4, 3).to(device)\ny = model(x)",
    "model = nn.Linear(3, 2).cuda()\nx = torch.randn(4, 3).cuda()\ny = model(x)",
    "model = nn.Linear(3, 2)\nmodel.to(device)\nx = torch.randn(4, 3, device=device)\ny = model(x)",
    "model = nn.Linear(3, 2)\ny = model(torch.randn(4, 3))",
    "x = torch.ones(3)\nx = x.to(device)",
    "x = torch.ones(3).to(device)\ny = x * 2 + 1",
    "x = torch.ones(3).cuda()\ny = x * torch.tensor(0.5)",
    "x = torch.ones(3).cuda()\ny = x + torch.ones(3).cuda()",
    "x = torch.ones(3).cuda()\ny = x.cpu() + torch.ones(3)",
    "x = torch.ones(3).cuda()\narr = x.cpu().numpy()",
    "x = torch.ones(3).cuda()\narr = x.detach().cpu().numpy()",
    "x = torch.ones(3)\narr = x.numpy()",
    "x = torch.ones(3).cuda()\nvalue = x.sum().item()\ntotal = torch.zeros(1) + value",
    "x = torch.ones(3).cuda()\ns = x.sum()\ny = torch.ones(3).cuda() + s",
    "x = torch.ones(3).cuda()\ny = x + torch.zeros_like(x)",
    "x = torch.ones(3).cuda()\ny = x + x.new_ones(3)",
    "x = torch.ones(3).cuda()\ny = x + torch.ones(3, device=x.device)",
    "x = torch.ones(3).cuda()\ny = x + torch.arange(3).to(x.device)",
    "x = torch.ones(3).cuda()\ny = x + torch.arange(3).type_as(x)",
    "x = torch.ones(3)\nif use_gpu:\n    x = x.cuda()\ny = x + torch.ones(3)",
    "x = torch.ones(3)\nfor _ in range(3):\n    x = x.cuda()\ny = x + 1",
    # Training loops done right.
    "model = nn.Linear(3, 2).to(device)\ncriterion = nn.CrossEntropyLoss()\n"
    "for x, y in DataLoader(ds):\n    x, y = x.to(device), y.to(device)\n"
    "    loss = criterion(model(x), y)\n    loss.backward()",
    "def train(model, loader, optimizer, device):\n    model.train()\n"
    "    for data, target in loader:\n        data, target = data.to(device), target.to(device)\n"
    "        loss = F.nll_loss(model(data), target)",
    "def train(model, loader):\n    for data, target in loader:\n        loss = F.nll_loss(model(data), target)",
    "model = nn.Linear(3, 2).to(device)\nfor batch in DataLoader(ds):\n"
    "    batch = {k: v.to(device) for k, v in batch.items()}\n    out = model(batch['x'])",
    "model = nn.Linear(3, 2).to(device)\nfor batch in DataLoader(ds):\n"
    "    x, y = [t.to(device) for t in batch]\n    out = model(x)",
    "model = nn.Linear(3, 2).to(device)\nloader = DataLoader(ds, collate_fn=to_gpu)\n"
    "for x, y in loader:\n    out = model(x)",
    "model = nn.DataParallel(nn.Linear(3, 2)).cuda()\nfor x, y in DataLoader(ds):\n    out = model(x)",
    "class Trainer:\n    def __init__(self, model, loader, device):\n        self.model = model.to(device)\n"
    "        self.loader = loader\n        self.device = device\n"
    "    def step(self):\n        for x, y in self.loader:\n            x = x.to(self.device)\n"
    "            return self.model(x)",
    "class Trainer:\n    def __init__(self, model):\n        self.model = model.cuda()\n"
    "    def set_model(self, model):\n        self.model = model\n"
    "    def step(self, x):\n        return self.model(x)",
    # Lightning-style modules and forward methods.
    "class Net(nn.Module):\n    def forward(self, x):\n        return x * torch.tensor(2.0)",
    "class Net(nn.Module):\n    def forward(self, x):\n        return x + torch.zeros(3, device=x.device)",
    "class Net(nn.Module):\n    def forward(self, x):\n        mask = torch.ones(3).to(x)\n        return x * mask",
    "class Net(nn.Module):\n    def forward(self, x):\n        return torch.cat([x, x.new_zeros(1, 3)])",
    "class Net(nn.Module):\n    def forward(self, x):\n        return x + 1.0",
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.register_buffer('pe', torch.zeros(10))\n    def forward(self, x):\n        return x + self.pe",
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.w = nn.Parameter(torch.zeros(10))\n    def forward(self, x):\n        return x * self.w",
    "class Lit(nn.Module):\n    def training_step(self, batch, batch_idx):\n        x, y = batch\n"
    "        return F.cross_entropy(self(x), y)",
    "class Net(nn.Module):\n    def forward(self, x):\n        idx = torch.arange(x.size(0), device=self.device)\n"
    "        return x[idx]",
    # Modules moved in place, and objects of unknown kind.
    "from torchvision.models import resnet18\nmodel = resnet18()\nmodel.to(device)",
    "model = AutoModel.from_pretrained('bert-base')\nmodel.to(device)",
    "enc = tokenizer('hi', return_tensors='pt')\nenc.to(device)",
    "net = MyNet()\nnet.cuda()",
    "def move(x):\n    x.to(device)",
    "state = torch.load('ckpt.pt', map_location='cpu')\nmodel.load_state_dict(state)",
    # Ordinals that are not hard-coded.
    "x = x.to(f'cuda:{rank}')",
    "torch.cuda.set_device(args.local_rank)",
    "x = x.cuda(0)",
    # Sampling functions return their result where their input is (diffusers' schedulers).
    "p = torch.rand(4, 3, device=device)\nroutes = torch.multinomial(p, 1)\n"
    "tokens = torch.randint(0, 9, (4, 1), device=device)\nout = torch.where(routes == 2, tokens, routes)",
    # Dict batches carry prompts and file names as lists of strings, not tensors.
    "pipe = make_pipeline()\npipe.to(device)\nfor example in DataLoader(prompts):\n"
    "    images = pipe(example['prompt']).images",
    # Loops: a join of the CPU and a device is unknown, never a mismatch.
    "x = torch.zeros(3)\nfor _ in range(3):\n    y = x + 1\n    x = x.cuda()\nz = x + torch.zeros(3)",
    "h = torch.zeros(3)\nfor x in xs:\n    h = h.to(device)\n    h = h + torch.ones(3, device=device)",
    "outs = []\nfor x in DataLoader(ds):\n    outs.append(x)\nfor x in DataLoader(ds):\n"
    "    outs.append(x.cuda())\nall_ = torch.cat(outs)",
    # Objects whose `.to()` moves every attribute (pyg's `Data`, `BatchEncoding`).
    "data = Data()\ndata.x = torch.randn(4, 3)\ndata = data.to(device)\n"
    "model = nn.Linear(3, 3).to(device)\nout = model(data.x)",
    "data = Data()\ndata.x = torch.randn(4, 3)\ndata.to(device)\n"
    "model = nn.Linear(3, 3).to(device)\nout = model(data.x)",
    "data.x = torch.randn(4, 3)\ndata = load()\nmodel = nn.Linear(3, 3).to(device)\nout = model(data.x)",
    # Calls: the argument, not the callee's default; every construction site, not one.
    "def sample(n, k, device=None):\n    return torch.randn(n, k, device=device)\n"
    "s = sample(4, 3, device='cpu')\nout = s + torch.zeros(4, 3)",
    "def sample(n, k, device='cuda'):\n    return torch.randn(n, k, device=device)\n"
    "s = sample(4, 3, device='cpu')\nout = s + torch.zeros(4, 3)",
    "def score(net, features):\n    return net(features)\nnet = nn.Linear(3, 3).to(device)\n"
    "s = score(net, torch.randn(4, 3).to(device))",
    "def score(net, features):\n    return net(features.to(device))\nnet = nn.Linear(3, 3).to(device)\n"
    "s = score(net, torch.randn(4, 3))",
    "class Evaluator:\n    def __init__(self, model, data):\n        self.model = model\n"
    "        self.data = data\n    def run(self):\n        return self.model(self.data)\n"
    "net = nn.Linear(3, 3).to(device)\na = Evaluator(net, torch.randn(4, 3).to(device))\n"
    "b = Evaluator(net, torch.randn(4, 3))",
    # An isinstance test proves a tensor only where it holds, and only of the class it names.
    "def run(image, device):\n    if not isinstance(image, torch.Tensor):\n"
    "        image = Wrapper(image)\n    image.to(device)",
    "def run(image, device):\n    if not isinstance(image, Image):\n"
    "        image = torch.zeros(3)\n    image.to(device)",
    # Module-like siblings are no data.
    "for model, batch in pairs:\n    batch = batch.to(dev)\n    model.to(dev)",
    # Tests that provoke the device error on purpose.
    "import pytest\ndef test_mismatch(device):\n    model = nn.Linear(3, 2).to(device)\n"
    "    with pytest.raises(RuntimeError):\n        model(torch.randn(2, 3))",
    "def pick(ids: torch.Tensor):\n    kept = torch.where(ids > 0, ids, torch.zeros_like(ids))\n"
    "    return kept",
    "def base_grid(h, w, device=None):\n    return torch.zeros(h, w, 2, device=device)\n"
    "def warp(flow: torch.Tensor):\n    return base_grid(4, 4, device=flow.device) + flow",
    "def prepare(values, device=None):\n    return torch.as_tensor(values).to(device)\n"
    "def shift(x: torch.Tensor):\n    return x + prepare([1.0, 2.0], x.device)",
    "def resample(x: torch.Tensor):\n    grid = torch.zeros(1, 4, 4, 2, device=x.device)\n"
    "    return F.grid_sample(x, grid)",
    "def lookup(ids: torch.Tensor):\n    return torch.arange(10, device=ids.device)[ids]",
    "def rows(x: torch.Tensor):\n    return x[torch.arange(2)]",
    "batch = {'x': torch.ones(2).to(device)}\nfor key in batch:\n    print(key + 'suffix')",
    "x = torch.randn(3, 3).to(device)\nidx = torch.nonzero(x > 0)\ny = idx.cpu().numpy()",
    "def make(n, device=None):\n    return torch.zeros(n, device=device)\n"
    "def main(x: torch.Tensor):\n    with torch.device('cuda'):\n        y = make(3)\n    return x + y",
    "import functools\ndef with_device(fn):\n    @functools.wraps(fn)\n    def wrapper(*a, **kw):\n"
    "        kw.setdefault('device', torch.device('cuda'))\n        return fn(*a, **kw)\n"
    "    return wrapper\n@with_device\ndef make(n, device=None):\n"
    "    return torch.zeros(n, device=device)\ndef run(x: torch.Tensor):\n    return x + make(3)",
    # The branch that runs only without CUDA keeps everything on the CPU.
    "class Loss(nn.Module):\n    def forward(self, x):\n        t = torch.stack([x[0], x[1]])\n"
    "        if torch.cuda.is_available():\n            return t / torch.ones(2).cuda()\n"
    "        return t / torch.ones(2)",
    "def scale(x: torch.Tensor):\n    if not torch.accelerator.is_available():\n"
    "        return x * torch.ones(3)\n    return x",
    "class T:\n    def test_moved(self):\n        model = nn.Linear(3, 2).to('cuda')\n"
    "        with self.assertRaises(RuntimeError):\n            model(torch.randn(2, 3))",
    # An item of a module's input may be a number, which mixes with any tensor.
    "class Scaled(nn.Module):\n    def forward(self, inputs):\n        x, scale = inputs\n"
    "        return torch.ones(3) * scale",
    # A CPU scalar mixes with a tensor on any device.
    "class Shifted(nn.Module):\n    def forward(self, x):\n        return torch.tensor(2.0) + x.mean()",
]


@pytest.mark.parametrize("snippet", CORRECT, ids=[f"correct-{i}" for i in range(len(CORRECT))])
def test_correct_code_stays_silent(snippet: str) -> None:
    assert flow_findings(snippet) == []


def test_there_are_at_least_forty_correct_snippets() -> None:
    assert len(CORRECT) >= 40
