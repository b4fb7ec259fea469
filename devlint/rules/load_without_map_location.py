from __future__ import annotations

import os

import libcst as cst

from devlint.analysis.checkpoints import CheckpointEvidence
from devlint.analysis.cpu_only import saved_here_on_cpu, written_beside_on_cpu
from devlint.analysis.devices import argument, has_star_kwargs, string_value
from devlint.analysis.prefilter import TORCH_LOAD
from devlint.analysis.project_saves import SaveConvention, save_convention
from devlint.context import FileContext, NodeEdit, RawFix
from devlint.diagnostics import Applicability
from devlint.rules.base import Invalid, Rule


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` called without `map_location` (or with
    `map_location=None`), outside code guarded by a CUDA availability check,
    where the loaded object can hold GPU tensors.

    Which loads can: the rule fires where the file shows a checkpoint (or a
    value saved from a device), and names the evidence; a load that shows
    neither is data whose author says nothing of a device, and stays silent:

    - **A checkpoint** (fires, saying why): the result goes into
      `load_state_dict`, is read with a checkpoint key (`"model"`, `"optimizer"`,
      `"state_dict"`, `"model_state_dict"`...), or this file saves the same path
      (or the same file name, the folders apart) from a state dict or from a
      function that moves things to a device.
    - **Named a checkpoint** (fires, saying which name): the path
      (`args.orig_ckpt_path`, `"model_best.pth"`, a `with open(...) as f`'s
      file, a local path's one assignment), the name the result is assigned to
      (`state_dict = torch.load(f)`), the object whose method takes it
      (`states.append(...)`, `optim.set_state(...)`) or the function loading it
      (`def load_checkpoint(path): return torch.load(path)`) says checkpoint
      (`ckpt`), state (`sd`), model, weights, optimizer, parameters, snapshot,
      pretrained, resume, EMA, net, encoder, decoder, backbone, generator,
      discriminator, teacher, student, LoRA, adapter, actor, critic or policy,
      as a whole word of the name (not `random_state`, `class_weights`,
      `hidden_states`: data; and where one of those names says data,
      `state = torch.load(p)` returned by `load_random_states`, none counts).
      The classic failure is
      exactly this: a checkpoint trained on a GPU machine, loaded by code that
      shows no device at all (CPU inference, a notebook on a laptop).
    - **Nothing shown** (silent): `embeddings = torch.load(args.embeddings_file)`,
      `transitions = torch.load(io.BytesIO(data))`, a generic
      `def load(path): return torch.load(path)`. Features, vocabularies, graphs
      and messages are mostly saved from the CPU; a finding there would be a
      guess.
    - **Numpy arrays** (silent): the loading function's return annotation is
      `np.ndarray` (or `npt.NDArray[...]`, `Optional[...]` of one, `... | None`,
      or a string of one) and it returns the result (or a name it is assigned
      to): numpy pickles hold no device tensor.
    - **A state of numbers** (silent): the result goes only into a
      learning-rate scheduler's or a gradient scaler's `load_state_dict`
      (`scheduler.load_state_dict(torch.load(...))`, `self.scaler`), whose
      states hold Python numbers, no tensors.
    - **A random generator's state** (silent): the result goes into
      `torch.random.set_rng_state`, `torch.cuda.set_rng_state_all`,
      `random.setstate` or `np.random.set_state`. `torch.get_rng_state()` and
      CUDA's generators' states are CPU tensors (a trainer's `rng_state.pth`).
    - **A dataset's data** (silent): a dataset class (its name or a base's ends
      with `Dataset`) loads a file that shows no checkpoint:
      `self.trajectories = torch.load(file_name)` in an `ExpertDataset`. A
      dataset's items go through a DataLoader, which prepares them on the CPU.
      A dataset that loads weights (`self.encoder.load_state_dict(...)`) or a
      whole model (`self.encoder = torch.load(path)`, then `self.encoder.eval()`
      or `self.encoder(x)`) still loads a checkpoint.
    - **Saved by the same function, before the load** (silent):
      `torch.save(x, buffer)` then `torch.load(buffer)`, a byte-buffer round trip
      (`torch.load(io.BytesIO(buffer.getvalue()))`), a temporary file written
      and read back, or a file of the same name or f-string template in the
      same folder (`os.path.join(save_dir, f"part_{rank}.pkl")`, each rank's
      part of one job). One run on the same machines: the devices it saved
      from exist.
    - **In a temporary place the same function made** (silent): a path in
      `with tempfile.TemporaryDirectory() as tmp`, `tempfile.mkdtemp()`, a
      `NamedTemporaryFile`, `mkstemp()[1]`, or pytest's `tmp_path`, into which
      the function saves (`model.save_pretrained(tmp)`) or which it hands to a
      function of the file that saves, by a call or a spawn
      (`split_files(src, tmp)`, `mp.spawn(worker, args=(out,))`); read back
      directly, through its local names or a loop over a glob of it: only this
      run wrote there. A function that only downloads into it does not count.
    - **Written earlier in this run** (silent): a test (`def test_load(weights_path):`)
      given a pytest fixture of the file that saves into a temporary place
      (`tmp_path`, `tmp_path_factory.mktemp(...)`) and returns that path; a
      method (not `__init__`, not a static or class method) loading a file name
      written out that the object's `__init__` saves in its own statements
      (`torch.save(model.state_dict(), "init_params.pt")`, read back by
      `range_test`); a function that hands the load's folder, before the load,
      to a call reaching a function of the project that saves that file name
      into the folder its caller gives (`early_stopping(loss, model, path)` in
      the training loop, an instance whose `__call__` runs `save_checkpoint(self,
      val_loss, model, path)`, which saves `path + "/" + "checkpoint.pth"`;
      then `torch.load(path + "/" + "checkpoint.pth")`).
      One process on one machine wrote it first.
    - **A file name this file always writes from values moved to the CPU**
      (silent): `torch.save(feats.cpu(), os.path.join(args.dump, "feats.pth"))`
      and `torch.load(os.path.join(args.load, "feats.pth"))`, the folders apart;
      or a name's template, read through the function's local names
      (`name = "%s_feats.pth" % split`), or a folder joined with `+`
      (`d + "/feats.pth"`). Moved to the CPU, or an attribute of `self` that
      every assignment makes on the CPU (`torch.Tensor()`, `torch.cat` of it
      and a CPU `torch.zeros(...)`), that nothing moves and that the file reads
      as a NumPy array (a loss log plotted with `self.log[:, i].numpy()`). A
      checkpoint too:
      `torch.save(network.cpu().state_dict(), path)` is how this code writes
      every file of that name.
    - **Saved by this file from CPU values** (silent): another function of the
      file saves the same path (`torch.save(self.collate(data_list),
      self.processed_paths[0])`) from values that show no device: no
      `.state_dict()`, `.cuda()`, `.to()` or `device=`, in a function that moves
      nothing to a device before the save (the other branch of an `if` aside; a
      loop around the save runs all of its body before the next save), and not
      a value its caller passed in (that says nothing of where the caller's
      tensors live). A processed dataset file; a cache of tokenized documents
      saved before the model goes to the GPU. Or from a name the saving
      function binds only to tensors it makes on the CPU and never moves
      (`logits = torch.empty(n, k)`, filled with `logits[i] = out.cpu()`),
      whatever else it moves. Not when the loading function
      takes the path from its caller: that may name any file.
    - **Moved to the CPU before its save** (silent): every save of the path
      in this file saves a value moved to the CPU, or a name its own block last
      binds to one (`feats = feats.detach().cpu()`, then
      `torch.save(feats, save_file)`).

    - **Saved by this file, which can use no device** (silent): the file saves
      the same path from what it made itself (not a value its caller passed
      in), and it can place nothing on a device: no device word in its text
      (`cuda`, `device`, `mps`, `xpu`, `.to(`, `DataParallel`, Accelerate,
      `Trainer`, `set_default...`), nor in the files it imports from its
      folder, and every other import the standard library or a known data
      library (see `cpu_only`). A CPU-only tutorial saving its model and loading
      it back, checkpoint or not.
    - **A CPU-only file's own state** (silent): the result goes into
      `self.actor.load_state_dict`, the file saves `self.actor.state_dict()`
      (an attribute of `self`: one object; not a model the caller passes in),
      and the file can place nothing on a device (the same test): whatever path
      its caller passes, this code wrote it from the CPU.
    - **Written by a CPU-only script beside it** (silent): the path is one
      string (`torch.load("char-rnn.pt")`), another script or notebook of the
      same folder saves that string (`torch.save(rnn, "char-rnn.pt")` in
      `train.py`), and this file and every file of the folder pass the same
      test and load nothing: a tutorial's `train.py` and `predict.py`. The file
      holds CPU tensors only.
    - **The project saves its weights on the CPU** (silent, for a checkpoint):
      some `torch.save` of the project saves weights it moved to the CPU first
      (`state_dict[key] = param.cpu()` for each item, as BasicSR's
      `save_network` does; `{k: v.cpu() for ...}`; `model.cpu().state_dict()`;
      `weights_to_cpu(...)`), and none, in a file that can use a device, saves
      a `.state_dict()` as it is. The project's releases are written the same
      way (see `project_saves`). An optimizer's state saved alone as it is
      (`torch.save(optimizer.state_dict(), path)`) keeps the convention for
      weights, not for a load restoring an optimizer.
    - **No GPU to save from** (silent): the file hides every GPU at its top
      (`os.environ["CUDA_VISIBLE_DEVICES"] = ""`, or `"-1"`), as test suites
      that compare against recorded outputs do. Its author's own run loaded
      the file on the CPU, so a GPU's file would have failed there first.

    Paths match by how they are written (`path`, `tmp.name` as `tmp`,
    `open(path, "wb")` as `path`, `self.processed_paths[0]`), never by guessing
    what a string holds. Across functions only a path that names one file
    everywhere matches: one built from literals, `self` attributes and
    module-level names (a local `ckpt_path` of another function is another
    file).

    ## Why is this bad?
    `torch.load` restores each tensor on the device it was saved from. A
    checkpoint saved on a GPU then fails to load on a machine without one
    ("Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False"), and on a multi-GPU machine every
    process piles its copy onto `cuda:0`.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu")  # or map_location=device
    ```

    ## Fix safety
    `map_location="cpu"` is added (or replaces `map_location=None`): an
    **unsafe** fix, because it changes where the loaded tensors land: code that
    expected them on the GPU must now move them.
    """

    code = "DEV008"
    name = "load-without-map-location"
    summary = "torch.load without map_location"
    fixable = True
    trigger_tokens = ("load",)
    required_patterns = (TORCH_LOAD,)

    VALID = (
        # a random generator's state: `state` names the data the function's name says it is
        "import torch\ndef load_random_states(folder):\n"
        "    state = torch.load(folder / 'random' / 'rank-0.pt')\n    return state",
        # a cache saved from a tensor the function made on the CPU and filled in place
        "import torch\nfrom pathlib import Path\ndef infer(out_dir, loader, model):\n"
        "    cache = out_dir + '/logits.pth'\n    if Path(cache).is_file():\n"
        "        logits = torch.load(cache)\n    else:\n"
        "        logits = torch.empty(100, 5)\n"
        "        for i, x in enumerate(loader):\n"
        "            logits[i] = model(x.cuda()).cpu()\n"
        "        torch.save(logits, cache)\n    return logits",
        # each rank saves its part, then reads every rank's from the same folder
        "import os, torch\ndef all_gather(data, save_dir, rank, world_size):\n"
        "    path = os.path.join(save_dir, f'data_to_gather_{rank}.pkl')\n"
        "    torch.save(data, path)\n    parts = []\n    for other in range(world_size):\n"
        "        name = f'data_to_gather_{other}.pkl'\n"
        "        parts.append(torch.load(os.path.join(save_dir, name)))\n    return parts",
        # the function's own cache, read back if there, else made from numbers and saved
        "import os, numpy as np, torch\ndef index_data(path, bin_path):\n"
        "    if os.path.isfile(bin_path):\n        data = torch.load(bin_path)\n"
        "        return data\n"
        "    data = {'rows': np.int64(read_rows(path))}\n    torch.save(data, bin_path)\n"
        "    return data",
        # the file hides every GPU: its author's run loaded on the CPU too
        "import os, torch\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\n"
        "def test_outputs(path):\n    expected = torch.load(path)",
        # what the same function saves there, it moved to the CPU just before
        "import os, torch\ndef extract(model, loader, save_file, device):\n"
        "    if not os.path.isfile(save_file):\n"
        "        feats = torch.cat([model(x.to(device)) for x in loader])\n"
        "        feats = feats.detach().cpu()\n        torch.save(feats, save_file)\n"
        "    else:\n        feats = torch.load(save_file)\n    return feats",
        # a cache saved from what was computed before anything went to a device
        "import os, torch\ndef main(model, docs, cache):\n    if os.path.exists(cache):\n"
        "        encoded = torch.load(cache)\n    else:\n"
        "        encoded = {k: tokenize(d) for k, d in docs.items()}\n"
        "        torch.save(encoded, cache)\n    model = model.cuda()",
        # a CPU-only tutorial saves its model and loads it back: nothing moves to a device
        "import torch\nfrom torch import nn\ndef save():\n    net = nn.Linear(2, 2)\n"
        "    torch.save(net.state_dict(), 'net_params.pkl')\ndef restore():\n"
        "    net = nn.Linear(2, 2)\n    net.load_state_dict(torch.load('net_params.pkl'))",
        "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')",
        "import torch\nstate = torch.load('ckpt.pt', map_location=device)",
        "import torch\nstate = torch.load('ckpt.pt', 'cpu')",
        "import torch\nstate = torch.load(path, **load_kwargs)",
        "import json\nstate = json.load(f)",
        "import torch\nif torch.cuda.is_available():\n    state = torch.load('ckpt.pt')",
        "import torch\nstate = torch.jit.load('model.pt', map_location='cpu')",
        # A function of the script, called before the load, saved the file in this run.
        "import torch\ndef train():\n    model.to(device)\n    torch.save(model, 'model.pt')\n"
        "train()\nmodel = torch.load('model.pt')",
        # A round trip in one function: saved and loaded by one process.
        "import io, torch\ndef reload(model):\n    buffer = io.BytesIO()\n"
        "    torch.save(model.state_dict(), buffer)\n    buffer.seek(0)\n"
        "    return torch.load(buffer)",
        "import io, torch\ndef reload(x):\n    b = io.BytesIO()\n    torch.save(x, b)\n"
        "    data = b.getvalue()\n    return torch.load(io.BytesIO(data))",
        "import torch\ndef test_save(tmp):\n    torch.save(torch.ones(2).cuda(), tmp.name)\n"
        "    assert torch.load(tmp).sum() == 2",
        # A processed dataset file the same file writes from CPU values.
        "import os, torch\nCACHE = os.path.join('data', 'rows.pt')\n"
        "def cache():\n    torch.save([torch.zeros(2)], CACHE)\n"
        "def restore():\n    return torch.load(CACHE)",
        "import torch\ndef cache():\n    with open('rows.pt', 'wb') as f:\n"
        "        torch.save([torch.zeros(2)], f)\n"
        "def restore():\n    with open(\"rows.pt\", 'rb') as f:\n        return torch.load(f)",
        "import torch\nclass Graphs:\n    def process(self):\n"
        "        data_list = [torch.zeros(2)]\n"
        "        torch.save(self.collate(data_list), self.processed_paths[0])\n"
        "    def load(self):\n"
        "        self.data, self.slices = torch.load(self.processed_paths[0])",
        "import torch\ndef cache():\n    torch.save([torch.zeros(2, device='cpu').to('cpu')], 'r.pt')\n"
        "def restore():\n    return torch.load('r.pt')",
        # `self.root` is the object's, not the loading function's `root` parameter.
        "import os, torch\nclass Digits:\n    def __init__(self, root):\n"
        "        self.root = root\n"
        "        self.data = torch.load(os.path.join(self.root, 'train.pt'))\n"
        "    def download(self):\n"
        "        with open(os.path.join(self.root, 'train.pt'), 'wb') as f:\n"
        "            torch.save(torch.ByteTensor(3), f)",
        # A cache the loading function writes itself, from CPU values, when the file is missing.
        "import os, numpy as np, torch\ndef splits(root):\n"
        "    path = os.path.join(root, 'splits.pt')\n    if os.path.exists(path):\n"
        "        train, test = torch.load(path)\n    else:\n"
        "        train, test = np.split(np.arange(10), 2)\n        torch.save([train, test], path)\n"
        "    return train, test",
        # The file name's template, through local names: always saved from CPU values.
        "import os, torch\ndef dump(feats, split, opt):\n"
        "    name = '%s_feats.pth' % split\n    path = os.path.join(opt.dump, name)\n"
        "    torch.save(feats.cpu(), path)\n"
        "def read(split, opt):\n    name = '%s_feats.pth' % split\n"
        "    return torch.load(os.path.join(opt.load, name))",
        # Random generators' states are CPU tensors, even CUDA's generators'.
        "import random, torch\ndef restore(folder):\n"
        "    states = torch.load(folder + '/rng_state.pth')\n    random.setstate(states['python'])\n"
        "    torch.cuda.random.set_rng_state_all(states['cuda'])",
        # Nothing shows a checkpoint or a device: features, vocabularies, a generic helper;
        # names of data (a random state, class weights, hidden states), a training function's
        # name for what it does not return, a model's input
        "import torch\nrandom_state = torch.load('rs.pt')",
        "import torch\ndef demos(args):\n    data = torch.load(args.file)\n"
        "    return data['states'], data['actions']",
        "import torch\nclass_weights = torch.load('counts.pt')",
        "import torch\ndef train_model(args):\n    vocab = torch.load(args.vocab_file)",
        "import torch\ndef f(model, path):\n    return model.generate(torch.load(path))",
        "import torch\nplan = torch.load('optimal_transport_plan.pt')",
        "import numpy as np, torch\nfrom typing import Optional\n"
        "def a(path) -> 'np.ndarray':\n    return torch.load(path)\n"
        "def b(path) -> Optional[np.ndarray]:\n    return torch.load(path)\n"
        "def c(path) -> np.ndarray | None:\n    return torch.load(path)",
        "import torch\ndef load(path):\n    return torch.load(path)",
        "import torch\ndef main(args):\n    embeddings = torch.load(args.embeddings_file)\n"
        "    return embeddings.shape",
        "import io, torch\ndef receive(data):\n    transitions = torch.load(io.BytesIO(data))\n"
        "    return transitions",
        # The function says it returns numpy arrays: numpy pickles hold no GPU tensors.
        "import numpy as np, torch\ndef init_states(path) -> np.ndarray:\n"
        "    return torch.load(path, weights_only=False)",
        "import numpy.typing as npt, torch\ndef init_states(path) -> npt.NDArray:\n"
        "    states = torch.load(path, weights_only=False)\n    return states.reshape(1, -1)",
        # Only this process wrote into a temporary directory it made.
        "import os, tempfile, torch\ndef test_save(model):\n"
        "    with tempfile.TemporaryDirectory() as tmp:\n        model.save_pretrained(tmp)\n"
        "        file = os.path.join(tmp, 'model.bin')\n        state = torch.load(file)",
        "import torch\ndef test_save(model, tmp_path):\n    model.save(tmp_path / 'm.pt')\n"
        "    state = torch.load(tmp_path / 'm.pt')",
        # ... through a function of the file that saves into it, read back by a glob's items
        "import glob, os, tempfile, torch\ndef split(src, tmp):\n"
        "    for i, path in enumerate(glob.glob(os.path.join(src, '*.bin'))):\n"
        "        torch.save(torch.load(path, map_location='cpu'), os.path.join(tmp, f'{i}.bin'))\n"
        "def merge(src):\n    with tempfile.TemporaryDirectory() as tmp:\n        split(src, tmp)\n"
        "        parts = glob.glob(os.path.join(tmp, '*.bin'))\n        first = torch.load(parts[0])\n"
        "        for i, part in enumerate(parts):\n            state = torch.load(part)",
        "import torch\ndef test_save(tmp_path):\n    fn = str(tmp_path / 'test.pt')\n"
        "    with incremental_save(fn) as f:\n        f.save({'0': torch.randn(5)})\n"
        "    sd_actual = torch.load(fn)",
        "import tempfile, torch\nimport torch.multiprocessing as mp\n"
        "def worker(rank, model, out):\n    torch.save(model.cuda().state_dict(), out)\n"
        "def test_states(model):\n    out = tempfile.mkstemp()[1]\n"
        "    mp.spawn(worker, args=(model, out), nprocs=2)\n    return torch.load(out)",
        # Whatever folder, the file this file writes under that name holds CPU values.
        "import os, torch\ndef dump(model, out):\n    feats = model(x).cuda()\n"
        "    torch.save(feats.cpu(), os.path.join(out, 'feats.pth'))\n"
        "def evaluate(args):\n    return torch.load(os.path.join(args.load, 'feats.pth'))",
        # The same name loaded in one branch and computed then saved in the other: a cache.
        "import os, torch\ndef features(path):\n    if os.path.exists(path):\n"
        "        feats = torch.load(path)\n    else:\n        feats = convert(read(path))\n"
        "        torch.save(feats, path)\n    return feats",
        # A dataset's data file: its items go through a DataLoader, on the CPU.
        "import torch\nclass ExpertDataset(torch.utils.data.Dataset):\n"
        "    def __init__(self, file_name):\n        self.trajectories = torch.load(file_name)",
        "import torch\nfrom torch.utils import data\nclass Pairs(data.Dataset):\n"
        "    def __init__(self, opt):\n        self.latents = torch.load(opt['latent_path'])",
        # A learning-rate scheduler's and a gradient scaler's states are numbers, no tensors.
        "import os, torch\ndef resume(scheduler, path):\n"
        "    scheduler.load_state_dict(torch.load(os.path.join(path, 'scheduler.pt')))",
        "import torch\ndef resume(self, path):\n    state = torch.load(path)\n"
        "    self.scaler.load_state_dict(state)",
        # Written earlier in this run: by a test's fixture, into a temporary place ...
        "import pytest, torch\n@pytest.fixture\ndef weights_path(tmp_path_factory):\n"
        "    path = tmp_path_factory.mktemp('m') / 'w.pt'\n"
        "    torch.save(Net().state_dict(), path)\n    return path\n"
        "def test_load(weights_path):\n    Net().load_state_dict(torch.load(weights_path))",
        # ... or by the object's `__init__`, before its other methods can run.
        "import torch\nclass LRFinder:\n    def __init__(self, model):\n"
        "        self.model = model\n        torch.save(model.state_dict(), 'init.pt')\n"
        "    def reset(self):\n        self.model.load_state_dict(torch.load('init.pt'))",
        # Every file of that name this code writes holds a state moved to the CPU.
        "import os, torch\ndef save(net, label):\n    name = '%s_net.pth' % label\n"
        "    torch.save(net.cpu().state_dict(), os.path.join(SAVE_DIR, name))\n"
        "def load(net, label, folder):\n    name = '%s_net.pth' % label\n"
        "    net.load_state_dict(torch.load(os.path.join(folder, name)))",
        # A log the file reads as a NumPy array: a CPU tensor, wherever it is saved.
        "import os, torch\nclass Loss:\n    def __init__(self):\n"
        "        self.log = torch.Tensor()\n    def start(self):\n"
        "        self.log = torch.cat((self.log, torch.zeros(1, 3)))\n    def plot(self):\n"
        "        plt.plot(self.log[:, 0].numpy())\n    def save(self, apath):\n"
        "        torch.save(self.log, os.path.join(apath, 'loss_log.pt'))\n"
        "    def load(self):\n        self.log = torch.load(self.dir + '/loss_log.pt')",
        # A CPU-only file restores the state it saves, whatever path its caller passes.
        "import torch\nclass Agent:\n    def save(self, path):\n"
        "        torch.save(self.actor.state_dict(), path)\n"
        "    def load(self, path):\n        self.actor.load_state_dict(torch.load(path))",
    )
    INVALID = (
        # a state dict is no random state, and a checkpoint's word beside one still names it
        Invalid(
            "import torch\ndef restore(args):\n"
            "    init_state_dict = torch.load(args.pretrained_checkpoint)\n"
            "    return init_state_dict",
            3,
            23,
            "(`pretrained_checkpoint` names one)",
        ),
        Invalid(
            "import torch\ndef load_checkpoint_and_rng_state(path):\n"
            "    loaded = torch.load(path)\n    return loaded",
            3,
            14,
            "(`load_checkpoint_and_rng_state` names one)",
        ),
        # the same cache, but factories make tensors on the default device set above
        Invalid(
            "import torch\nfrom pathlib import Path\ntorch.set_default_device('cuda')\n"
            "def infer(out_dir, loader, model):\n"
            "    cache = out_dir + '/logits.pth'\n    if Path(cache).is_file():\n"
            "        logits = torch.load(cache)\n    else:\n"
            "        logits = torch.empty(100, 5)\n"
            "        for i, x in enumerate(loader):\n"
            "            logits[i] = model(x.cuda())\n"
            "        torch.save(logits, cache)\n    return logits",
            7,
            18,
        ),
        # ... made on the GPU
        Invalid(
            "import torch\nfrom pathlib import Path\ndef infer(out_dir, loader, model):\n"
            "    cache = out_dir + '/logits.pth'\n    if Path(cache).is_file():\n"
            "        logits = torch.load(cache)\n    else:\n"
            "        logits = torch.empty(100, 5, device='cuda')\n"
            "        for i, x in enumerate(loader):\n"
            "            logits[i] = model(x.cuda()).cpu()\n"
            "        torch.save(logits, cache)\n    return logits",
            6,
            18,
            "this file saves it from `logits`",
        ),
        # ... but not from what the caller's model computed: it may be on a GPU
        Invalid(
            "import os, torch\ndef evaluate(model, loader, cache):\n    if os.path.exists(cache):\n"
            "        preds = torch.load(cache)\n    else:\n"
            "        preds = torch.cat([model(x) for x, _ in loader])\n"
            "        torch.save(preds, cache)\n"
            "device = 'cuda' if torch.cuda.is_available() else 'cpu'",
            4,
            17,
        ),
        # ... but here the copy moved to the CPU is not what it saves
        Invalid(
            "import os, torch\ndef extract(model, loader, save_file, device):\n"
            "    if not os.path.isfile(save_file):\n"
            "        feats = torch.cat([model(x.to(device)) for x in loader])\n"
            "        shown = feats.detach().cpu()\n        torch.save(feats, save_file)\n"
            "    else:\n        feats = torch.load(save_file)\n    return feats",
            8,
            17,
        ),
        # ... but saved in a loop that moves the model: a later iteration saves GPU values
        Invalid(
            "import os, torch\ndef main(model, batches, cache):\n    if os.path.exists(cache):\n"
            "        cached = torch.load(cache)\n    for x in batches:\n"
            "        features = encode(x)\n        torch.save(features, cache)\n"
            "        model = model.cuda()",
            4,
            18,
        ),
        # ... and an option's validation no guard (`map_location` may be left at None)
        Invalid(
            "import torch\ndef load(optimizer, path, map_location=None):\n"
            "    if map_location not in [None, 'cpu', 'on_device']:\n"
            "        raise TypeError(map_location)\n"
            "    optimizer.load_state_dict(torch.load(path))",
            5,
            31,
        ),
        # a function named for an accelerator is no GPU-only code: Accelerate's own loader
        Invalid(
            "import os, torch\ndef load_accelerator_state(input_dir, models):\n"
            "    for i, model in enumerate(models):\n"
            "        model.load_state_dict(torch.load(os.path.join(input_dir, f'm_{i}.bin')))",
            4,
            31,
        ),
        # a save in the other branch, or in a function defined there, is no round trip
        Invalid(
            "import torch\ndef main(args):\n    model = Net().to(args.device)\n"
            "    if args.train:\n"
            "        torch.save(model.state_dict(), 'model.pt')\n    else:\n"
            "        model.load_state_dict(torch.load('model.pt'))",
            7,
            31,
        ),
        Invalid(
            "import torch\ndef main(args):\n    model = Net().to(args.device)\n"
            "    def checkpoint():\n"
            "        torch.save(model.state_dict(), 'model.pt')\n"
            "    model.load_state_dict(torch.load('model.pt'))\n    train(model, checkpoint)",
            6,
            27,
        ),
        # the same tutorial where a device is used: the saved tensors may be a GPU's
        Invalid(
            "import torch\nfrom torch import nn\ndef save():\n    net = nn.Linear(2, 2)\n"
            "    net.to('mps')\n    torch.save(net.state_dict(), 'net_params.pkl')\n"
            "def restore():\n    net = nn.Linear(2, 2)\n"
            "    net.load_state_dict(torch.load('net_params.pkl'))",
            9,
            25,
        ),
        Invalid("import torch\nstate = torch.load('ckpt.pt')", 2, 9, "map_location"),
        # named a checkpoint by its path, its name, what takes it, or the function loading it
        Invalid(
            "import torch\ndef main(args):\n    theta = torch.load(args.orig_ckpt_path)",
            3,
            13,
            "a checkpoint (`orig_ckpt_path` names one)",
        ),
        Invalid(
            "import torch\ndef load(path):\n    with open(path, 'rb') as f:\n"
            "        model_state = torch.load(f)\n    return model_state",
            4,
            23,
            "a checkpoint (`model_state` names one)",
        ),
        Invalid(
            "import torch\ndef parse(files):\n    states = []\n    for f in files:\n"
            "        states.append(torch.load(f))\n    return states",
            5,
            23,
            "(`states` names one)",
        ),
        Invalid(
            "import torch\ndef restore(optim, path):\n    optim.set_state(torch.load(path))",
            3,
            21,
            "(`optim` names one)",
        ),
        # wherever the load sits in the assignment, a one-line suite's too
        Invalid(
            "import torch\ndef h(args):\n"
            "    checkpoint = torch.load(args.file) if args.file else None",
            3,
            18,
            "(`checkpoint` names one)",
        ),
        Invalid(
            "import os, torch\ndef g(path):\n"
            "    if os.path.exists(path): sd = dict(torch.load(path))",
            3,
            40,
            "(`sd` names one)",
        ),
        Invalid("import torch\nema = torch.load(path)", 2, 7, "(`ema` names one)"),
        Invalid(
            "import torch\ndef simulate(args):\n    data = torch.load(args.file)\n"
            "    policy = data['evaluation/policy']",
            3,
            12,
            'the checkpoint key "evaluation/policy"',
        ),
        # a nested function's `return` is not the loader's: it returns a GPU tensor
        Invalid(
            "import numpy as np, torch\ndef load_ckpt(ckpt) -> np.ndarray:\n"
            "    x = torch.load(ckpt)\n    def inner():\n        return x\n"
            "    return torch.from_numpy(x).cuda()",
            3,
            9,
        ),
        Invalid(
            "import torch\ndef load_checkpoint(path):\n    return torch.load(path)",
            3,
            12,
            "(`load_checkpoint` names one)",
        ),
        # a helper's parameter is not the module's name it shadows: the module's save of
        # `fn` (a corpus cache) says nothing of the models the helper loads
        Invalid(
            "import torch\ndef model_load(fn):\n    with open(fn, 'rb') as f:\n"
            "        return torch.load(f)\nfn = 'corpus.data'\ntorch.save(corpus, fn)\n"
            "model = Net().cuda()",
            4,
            16,
            "`torch.load(f)` has no `map_location`: a checkpoint (`model_load` names one) saved on a "
            "GPU fails",
        ),
        # a temporary place this function only downloads into: what is there came from elsewhere
        Invalid(
            "import tempfile, torch\nfrom pathlib import Path\ndef load(url):\n"
            "    tmp = tempfile.TemporaryDirectory()\n    path = Path(tmp.name) / 'ckpt.pt'\n"
            "    get_file(url, str(path))\n    return torch.load(path)",
            7,
            12,
        ),
        # a function returning tensors, not arrays
        Invalid(
            "import numpy as np, torch\ndef load_states(path) -> torch.Tensor:\n"
            "    return torch.load(path)",
            3,
            12,
        ),
        # ... by a function of the file that downloads into it, saving nothing
        Invalid(
            "import os, tempfile, torch, urllib.request\ndef fetch(url, folder):\n"
            "    urllib.request.urlretrieve(url, os.path.join(folder, 'weights.pt'))\n"
            "def load(url):\n    with tempfile.TemporaryDirectory() as tmp:\n"
            "        fetch(url, tmp)\n        return torch.load(os.path.join(tmp, 'weights.pt'))",
            7,
            16,
        ),
        # the same file name, but written from a state dict: the weights' devices
        Invalid(
            "import os, torch\ndef dump(model, out):\n"
            "    torch.save(model.state_dict(), os.path.join(out, 'w.pth'))\n"
            "def evaluate(args):\n    return torch.load(os.path.join(args.load, 'w.pth'))",
            5,
            12,
        ),
        # a dataset that loads an encoder's weights loads a checkpoint
        Invalid(
            "import torch\nclass Features(torch.utils.data.Dataset):\n"
            "    def __init__(self, path):\n"
            "        self.encoder.load_state_dict(torch.load(path))",
            4,
            38,
            "the result goes into `load_state_dict`",
        ),
        # ... and so does one that loads a whole model
        Invalid(
            "import torch\nclass Features(torch.utils.data.Dataset):\n"
            "    def __init__(self, path):\n        self.encoder = torch.load(path)\n"
            "        self.encoder.eval()",
            4,
            24,
        ),
        # any object's `set_state`: no random generator's, by its name
        Invalid(
            "import torch\ndef load(optim, path):\n    optim.set_state(torch.load(path))", 3, 21
        ),
        # the scheduler's part of a checkpoint that also holds the model's weights
        Invalid(
            "import torch\ndef resume(model, scheduler, path):\n    state = torch.load(path)\n"
            "    scheduler.load_state_dict(state['scheduler'])\n"
            "    model.load_state_dict(state['model'])",
            3,
            13,
            "the result goes into `load_state_dict`",
        ),
        # ... but not a name the file moves to a device.
        Invalid(
            "import os, torch\nclass Loss:\n    def plot(self):\n"
            "        plt.plot(self.log[:, 0].numpy())\n    def save(self, apath):\n"
            "        self.log = self.log.cuda()\n"
            "        torch.save(self.log, os.path.join(apath, 'loss_log.pt'))\n"
            "    def load(self, apath):\n"
            "        self.log = torch.load(os.path.join(apath, 'loss_log.pt'))",
            9,
            20,
        ),
        # A fixture that returns a path it does not write: any file.
        Invalid(
            "import pytest, torch\n@pytest.fixture\ndef weights_path():\n"
            "    return 'weights/net.pt'\n"
            "def test_load(weights_path):\n    Net().load_state_dict(torch.load(weights_path))",
            6,
            27,
        ),
        # `__init__` saving under a condition: the file may be an older one.
        Invalid(
            "import torch\nclass LRFinder:\n    def __init__(self, model, fresh):\n"
            "        if fresh:\n            torch.save(model.state_dict(), 'init.pt')\n"
            "    def reset(self):\n        self.model.load_state_dict(torch.load('init.pt'))",
            7,
            36,
        ),
        # A helper that is no test may be called with any path, whatever the fixture's name.
        Invalid(
            "import pytest, torch\n@pytest.fixture\ndef weights_path(tmp_path):\n"
            "    path = tmp_path / 'w.pt'\n    torch.save(Net().state_dict(), path)\n"
            "    return path\ndef load_net(weights_path):\n"
            "    Net().load_state_dict(torch.load(weights_path))",
            8,
            27,
        ),
        # `__init__` itself, or a static method, may run before the save.
        Invalid(
            "import torch\nclass LRFinder:\n    def __init__(self, model):\n"
            "        model.load_state_dict(torch.load('init.pt'))\n"
            "        torch.save(model.state_dict(), 'init.pt')",
            4,
            31,
        ),
        # The same name in two folders: the same script saves one and loads the other.
        Invalid(
            "import os, torch\nfor epoch in range(9):\n"
            "    torch.save(model.state_dict(), os.path.join(args.out, 'best.pth'))\n"
            "model.load_state_dict(torch.load(os.path.join(args.pretrained, 'best.pth')))",
            4,
            23,
        ),
        # ... nor one an assignment may leave on a device (a list of losses, stacked later).
        Invalid(
            "import torch\nclass Log:\n    def __init__(self):\n        self.log = []\n"
            "    def plot(self):\n        self.log = torch.stack(self.log).cpu()\n"
            "        print(self.log.numpy())\n    def save(self, d):\n"
            "        torch.save(self.log, d + '/log_state.pt')\n"
            "    def load(self, d):\n        self.log = torch.load(d + '/log_state.pt')",
            11,
            20,
        ),
        # A suffix is no file name: `args.teacher + "_best.pth"` is another model's file.
        Invalid(
            "import torch\ndef export(student, args):\n"
            "    torch.save(student.cpu().state_dict(), args.student + '_best.pth')\n"
            "def distill(teacher, args):\n"
            "    teacher.load_state_dict(torch.load(args.teacher + '_best.pth'))",
            5,
            29,
        ),
        # A model the caller passes in is not the object the file saves, whatever its name.
        Invalid(
            "import torch\nfrom torch import nn\ndef train():\n    model = nn.Linear(2, 2)\n"
            "    torch.save(model.state_dict(), 'mine.pt')\n"
            "def finetune(model, pretrained_path):\n"
            "    model.load_state_dict(torch.load(pretrained_path))",
            7,
            27,
        ),
        # The same, where the file can use a device: the path may name a GPU's checkpoint.
        Invalid(
            "import torch\nclass Agent:\n    def save(self, path):\n"
            "        torch.save(self.actor.state_dict(), path)\n"
            "    def load(self, path):\n        self.actor.load_state_dict(torch.load(path))\n"
            "        self.actor.to(self.device)",
            6,
            36,
        ),
        # ... or where the file saves another object's state.
        Invalid(
            "import torch\nclass Agent:\n    def save(self, path):\n"
            "        torch.save(self.critic.state_dict(), path)\n"
            "    def load(self, path):\n        self.actor.load_state_dict(torch.load(path))",
            6,
            36,
        ),
        Invalid(
            "import torch\nstate = torch.load('ckpt.pt', map_location=None)",
            2,
            9,
            fixed="import torch\nstate = torch.load('ckpt.pt', map_location=\"cpu\")",
        ),
        Invalid("from torch import load as restore\nstate = restore('c.pt')", 2, 9),
        # torch through a star import of a project module: `torch.load` is torch's
        Invalid("from models.common import *\nmodel = torch.load(w)['model']", 2, 9),
        Invalid(
            "from torch import load\nstate = load(f)",
            2,
            9,
            fixed='from torch import load\nstate = load(f, map_location="cpu")',
        ),
        Invalid(
            "import torch as th\nm.load_state_dict(th.load(p, weights_only=True))",
            2,
            19,
            "goes into `load_state_dict`",
        ),
        Invalid(
            "import torch\ndef resume(model, path):\n    ckpt = torch.load(path)\n"
            "    model.load_state_dict(ckpt['model_state_dict'])",
            3,
            12,
            "goes into `load_state_dict`",
        ),
        Invalid(
            "import torch\ndef resume(path):\n    ckpt = torch.load(path)\n"
            "    return ckpt['optimizer']",
            3,
            12,
            'checkpoint key "optimizer"',
        ),
        # The file saves the path from a moved model's state dict.
        Invalid(
            "import torch\nCKPT = 'model.pt'\ndef train(model):\n    model.cuda()\n"
            "    torch.save(model.state_dict(), CKPT)\n"
            "def evaluate():\n    weights = torch.load(CKPT)\n    return weights",
            7,
            15,
            "this file saves it from `model.state_dict()`",
        ),
        # Saved by a helper from what its caller passed: that says nothing of the device.
        Invalid(
            "import torch\ndef save(obj, path):\n    torch.save(obj, path)\n"
            "def load_checkpoint(path):\n    return torch.load(path)",
            5,
            12,
        ),
        # `f` stands for a different file in each function.
        Invalid(
            "import torch\ndef cache(rows):\n    with open('rows.pt', 'wb') as f:\n"
            "        torch.save([1, 2], f)\n"
            "def restore():\n    with open('model.pt', 'rb') as f:\n        return torch.load(f)",
            7,
            16,
        ),
        # The caller chooses the path: it may name any file, whatever this file saves there.
        Invalid(
            "import torch\ndef export(path):\n    sd = {'w': torch.zeros(2)}\n"
            "    torch.save(sd, path)\n"
            "def convert_checkpoint(path):\n    return torch.load(path)",
            6,
            12,
        ),
        # Saved back after the load (a checkpoint upgraded in place): no round trip.
        Invalid(
            "import torch\ndef upgrade(files):\n    for file in files:\n"
            "        checkpoint = torch.load(file)\n        torch.save(checkpoint, file)",
            4,
            22,
        ),
        # The function's own cache, written from features it computes on a device.
        Invalid(
            "import os, torch\ndef features(model, images, path):\n"
            "    if os.path.exists(path):\n        return torch.load(path)\n"
            "    feats = model(images.cuda())\n    torch.save(feats, path)\n    return feats",
            4,
            16,
            "this file saves it from `feats`",
        ),
        # The folder comes from the caller: any folder, whatever `save` wrote.
        Invalid(
            "import os, torch\nclass Codebook:\n"
            "    def save(self, path):\n"
            "        torch.save(self.weights, os.path.join(path, 'weights.pth'))\n"
            "    def load(self, path):\n"
            "        self.weights = torch.load(os.path.join(path, 'weights.pth'))",
            6,
            24,
        ),
        # A local name of another function is another file.
        Invalid(
            "import torch\ndef edit(trainer):\n    ckpt_path = trainer.best_path\n"
            "    torch.save({'epoch': 1}, ckpt_path)\n"
            "def check(trainer):\n    ckpt_path = trainer.last_path\n"
            "    return torch.load(ckpt_path)",
            7,
            12,
        ),
        # Another file in the same folder is no round trip.
        Invalid(
            "import os, torch\ndef convert(root):\n"
            "    torch.save(torch.zeros(2), os.path.join(root, 'model_a.pt'))\n"
            "    return torch.load(os.path.join(root, 'model_b.pt'))",
            4,
            12,
        ),
        # Hiding GPUs inside a function, or all but one, leaves a GPU to save from.
        Invalid(
            "import os, torch\ndef main(ckpt_path):\n"
            "    os.environ['CUDA_VISIBLE_DEVICES'] = ''\n    return torch.load(ckpt_path)",
            4,
            12,
        ),
        Invalid(
            "import os, torch\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
            "state = torch.load('ckpt.pt')",
            3,
            9,
        ),
        # An f-string of other values names another file: the teacher's, not the student's.
        Invalid(
            "import os, torch\ndef distill(student, teacher, args):\n"
            "    torch.save(student.state_dict(), os.path.join(args.ckpt, f'{args.student}.pth'))\n"
            "    teacher.load_state_dict(torch.load(os.path.join(args.ckpt, f'{args.teacher}.pth')))",
            4,
            29,
        ),
        # A byte buffer from elsewhere (an archive, the network) is no round trip.
        Invalid(
            "import io, torch\ndef read(weight_bytes):\n"
            "    return torch.load(io.BytesIO(weight_bytes))",
            3,
            12,
        ),
    )

    def begin_file(self, context: FileContext) -> None:
        super().begin_file(context)
        self._evidence = CheckpointEvidence(
            context.module,
            context.names,
            lambda: saved_here_on_cpu(context.path, context.source),
            lambda: _project_saves(context.path),
        )

    def _written_beside_from_cpu(self, load: cst.Call) -> bool:
        """A file name written out (`torch.load("char-rnn.pt")`) that a CPU-only script of the
        same folder saves (see `cpu_only.written_beside_on_cpu`)."""
        path = argument(load, 0, "f")
        file_name = string_value(path.value) if path is not None else None
        if not file_name:
            return False
        return written_beside_on_cpu(self.context.path, self.context.source, file_name) is not None

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.names.qualified_name(node.func) != "torch.load":
            return
        if self.context.guards.guarded:
            return
        location = argument(node, 1, "map_location")
        if location is None and has_star_kwargs(node):
            return
        if location is not None and not (
            isinstance(location.value, cst.Name) and location.value.value == "None"
        ):
            return
        scope = self.context.scopes.current_function() or self.context.module
        statement = self.context.current_statement()
        assert statement is None or isinstance(statement, cst.CSTNode)
        enclosing = self.context.scopes.current_class()
        classes = () if enclosing is None else (enclosing.name, *enclosing.bases)
        evidence = self._evidence.evidence(node, scope, statement, classes)
        if evidence.checkpoint is None or self._written_beside_from_cpu(node):
            return  # (safe, or nothing shows a hazard: `evidence.safe` says which)
        hazard = f"a checkpoint ({evidence.checkpoint}) saved on a GPU fails"
        if location is not None:
            edit = NodeEdit.replace(location.value, '"cpu"')
        elif node.args:
            edit = NodeEdit.insert_after(node.args[-1].value, ', map_location="cpu"')
        else:
            edit = None
        fix = None
        if edit is not None:
            message = 'Add `map_location="cpu"`: tensors then load on the CPU'
            fix = RawFix(Applicability.UNSAFE, message, (edit,))
        self.report(
            node,
            f"`{self.context.source_of(node)}` has no `map_location`: {hazard} to load on a "
            'machine without one; pass `map_location="cpu"` or the target device',
            fix=fix,
        )


def _project_saves(path: str) -> SaveConvention:
    """How the project of ``path`` saves (see `project_saves`), for a file on disk."""
    return save_convention(path) if os.path.isfile(path) else SaveConvention(None)
