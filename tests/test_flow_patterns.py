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
        [("DEV005", 9, 25)],
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
        [("DEV006", 4, 5)],
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
    # Tests that provoke the device error on purpose.
    "import pytest\ndef test_mismatch(device):\n    model = nn.Linear(3, 2).to(device)\n"
    "    with pytest.raises(RuntimeError):\n        model(torch.randn(2, 3))",
    "class T:\n    def test_moved(self):\n        model = nn.Linear(3, 2).to('cuda')\n"
    "        with self.assertRaises(RuntimeError):\n            model(torch.randn(2, 3))",
]


@pytest.mark.parametrize("snippet", CORRECT, ids=[f"correct-{i}" for i in range(len(CORRECT))])
def test_correct_code_stays_silent(snippet: str) -> None:
    assert flow_findings(snippet) == []


def test_there_are_at_least_forty_correct_snippets() -> None:
    assert len(CORRECT) >= 40
