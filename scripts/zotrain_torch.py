#!/usr/bin/python3
"""A zotrain run in PyTorch: its checkpoint as a torch.nn.Module, its test set, its accuracy.

    /usr/bin/python3 scripts/zotrain_torch.py RUN_DIR

loads RUN_DIR/checkpoint.safetensors with RUN_DIR/config.json (model.arch, model.precision,
data.dataset, data.root, data.test_limit, data.points, int8.input, int8.batchnorm,
train.batch_size) and prints PyTorch's test accuracy next to the run's own (summary.json).
Needs Debian's python3-torch, and python3-h5py for PointNet; no safetensors package (the format,
an 8-byte little-endian header length, a JSON header and the raw data, is read here).

As a module (five lines):

    import sys; sys.path.insert(0, "scripts")
    import zotrain_torch as zt
    model = zt.load_model("runs/quickstart")               # torch.nn.Module, eval mode
    x, y = zt.test_set("runs/quickstart")                  # the run's inputs, transformed
    print(zt.accuracy(model, x, y))                        # percent, as summary.json

(int8 PointNet standardises per evaluated batch: pass zt.eval_batch_size(run) as accuracy's
batch_size, as evaluate_run(run) does.)

FP32 (docs/design.md §2, §13): the state dict loads with strict names; the accuracy is the run's
(to within an FP32 sum's rounding flipping a near-tied argmax). Int8 (docs/design.md §5): the
model is the dequantised float model, weights w · 2^exponent, no biases, the input rounded as
int8.input rounds it (§5.6), PointNet's BatchNorm an affine-free standardisation with the
evaluated batch's own statistics (§5.8). It skips the integer network's requantisation
(power-of-two rescaling with rounding to 7 bits after every product), so its accuracy is close
to the run's but not identical.

Exit status: 0, 2 on bad input (a missing file, an unsupported config), with one message.
"""

import gzip
import json
import math
import os
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"zotrain_torch: {e.name} is missing: run with Debian's /usr/bin/python3 and "
          "python3-torch (scripts/install-deps.sh --cross installs it)", file=sys.stderr)
    sys.exit(2)

# The image sets' normalisation (src/config/catalogue.cpp).
NORMALISATION = {"mnist": (0.1307, 0.3081), "fashion_mnist": (0.2860, 0.3530)}
# train.batch_size null: the paper's batches (src/config/catalogue.cpp), which evaluation uses too.
DEFAULT_BATCH = {("lenet5", "fp32"): 32, ("lenet5", "int8"): 256,
                 ("pointnet", "fp32"): 32, ("pointnet", "int8"): 32}
DTYPES = {"F32": "<f4", "I8": "i1", "I32": "<i4"}


class InputError(Exception):
    """Bad input: a missing file, a tensor or a config value this script cannot use."""


# --- safetensors -------------------------------------------------------------------------------

def read_safetensors(path):
    """{name: torch tensor} (F32, I8, I32) and the metadata dict."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    if len(raw) < 8:
        raise InputError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError:
        raise InputError(f"{path}: the header is not JSON")
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in DTYPES:
            raise InputError(f"{path}: tensor {name} has dtype {t['dtype']}, "
                             "expected F32, I8 or I32")
        b, e = t["data_offsets"]
        a = np.frombuffer(data[b:e], dtype=DTYPES[t["dtype"]])
        if a.size != math.prod(t["shape"]):
            raise InputError(f"{path}: tensor {name} has {a.size} values for shape {t['shape']}")
        tensors[name] = torch.from_numpy(a.reshape(t["shape"]).copy())
    return tensors, header.get("__metadata__", {})


def write_safetensors(path, tensors):
    """F32 tensors {name: tensor} as a safetensors file (what --init-from reads)."""
    header, blobs, off = {}, [], 0
    for name, t in sorted(tensors.items()):
        b = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# --- models (docs/design.md §2), with zotrain's parameter names ---------------------------------

class LeNet5(nn.Module):
    """zotrain's LeNet-5; bias=False is the int8 network (no biases)."""

    def __init__(self, bias=True):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2, bias=bias)
        self.conv2 = nn.Conv2d(6, 16, 5, padding=2, bias=bias)
        self.fc1 = nn.Linear(16 * 7 * 7, 120, bias=bias)
        self.fc2 = nn.Linear(120, 84, bias=bias)
        self.fc3 = nn.Linear(84, 10, bias=bias)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class BatchStandardise(nn.Module):
    """Int8 PointNet's BatchNorm (docs/design.md §5.8): per channel, the evaluated batch's mean and
    (biased) variance over batch × points, no γ, β, no running statistics."""

    def forward(self, y):  # [B, N, C]
        mu = y.mean(dim=(0, 1), keepdim=True)
        var = ((y - mu) ** 2).mean(dim=(0, 1), keepdim=True)
        return (y - mu) / var.sqrt().clamp_min(1e-12)


class PointLayer(nn.Module):
    """A per-point linear layer without bias, then BatchNorm (`<name>.bn`) and ReLU."""

    def __init__(self, cin, cout, bn):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(cout, cin))
        if bn == "fp32":
            self.bn = nn.BatchNorm1d(cout, eps=1e-5, momentum=0.1)
        elif bn == "batch":
            self.bn = BatchStandardise()
        else:
            self.bn = None

    def forward(self, x):  # [B, N, C]
        y = x @ self.weight.t()
        if isinstance(self.bn, nn.BatchNorm1d):
            y = self.bn(y.transpose(1, 2)).transpose(1, 2)
        elif self.bn is not None:
            y = self.bn(y)
        return F.relu(y)


class PointNet(nn.Module):
    """zotrain's PointNet without T-Nets; input [B, N, 3]. bn: "fp32" (BatchNorm, running
    statistics in eval), "batch" (int8 §5.8) or None (int8.batchnorm false); bias: the head's."""

    WIDTHS = (3, 64, 64, 64, 128, 1024)

    def __init__(self, classes=40, bn="fp32", bias=True):
        super().__init__()
        for k in range(5):
            setattr(self, f"mlp{k + 1}", PointLayer(self.WIDTHS[k], self.WIDTHS[k + 1], bn))
        self.fc1 = nn.Linear(1024, 512, bias=bias)
        self.fc2 = nn.Linear(512, 256, bias=bias)
        self.fc3 = nn.Linear(256, classes, bias=bias)

    def forward(self, x):
        for k in range(5):
            x = getattr(self, f"mlp{k + 1}")(x)
        x = x.max(dim=1).values
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


# --- a run ---------------------------------------------------------------------------------------

def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except ValueError:
        raise InputError(f"{path}: not JSON")


def run_config(run_dir):
    cfg = read_json(os.path.join(run_dir, "config.json"))
    data = cfg.get("data", {})
    for key, neutral in (("subset", None), ("rotate_degrees", 0.0), ("validation", None)):
        if data.get(key, neutral) not in (neutral, 0):
            raise InputError(f"{run_dir}/config.json: data.{key} is {data[key]!r}; this script "
                             f"reads only runs without it (expected {json.dumps(neutral)})")
    return cfg


def _precision(cfg):
    return cfg.get("model", {}).get("precision", "fp32")


def _int8(cfg):
    return cfg.get("int8") or {}


def load_model(run_dir, checkpoint=None):
    """The run's model as a torch.nn.Module in eval mode (int8: the dequantised float model)."""
    cfg = run_config(run_dir)
    arch, precision = cfg["model"]["arch"], _precision(cfg)
    path = checkpoint or os.path.join(run_dir, "checkpoint.safetensors")
    tensors, _ = read_safetensors(path)
    if precision == "int8":
        state = {}
        for name, t in tensors.items():
            if name.endswith(".exponent"):
                continue
            e = tensors.get(name + ".exponent")
            if t.dtype != torch.int8 or e is None:
                raise InputError(f"{path}: tensor {name} is not an I8 weight with an exponent")
            state[name] = t.to(torch.float64).mul(2.0 ** int(e.reshape(-1)[0])).float()
    else:
        state = tensors
    if arch == "lenet5":
        model = LeNet5(bias=precision == "fp32")
    elif arch == "pointnet":
        bn = "fp32" if precision == "fp32" else (
            "batch" if _int8(cfg).get("batchnorm", True) else None)
        model = PointNet(bn=bn, bias=precision == "fp32")
    else:
        raise InputError(f"{run_dir}/config.json: model.arch is {arch!r}, "
                         "expected lenet5 or pointnet")
    expected = {k for k in model.state_dict() if not k.endswith("num_batches_tracked")}
    if set(state) != expected:
        missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
        raise InputError(f"{path}: not a {arch} {precision} checkpoint (missing {missing}, "
                         f"unknown {extra})")
    model.load_state_dict(state, strict=False)
    return model.eval()


def load_idx(path):
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})")
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def image_transform(pixels, dataset, precision="fp32", int8_input="shift"):
    """uint8 images → float inputs as the run sees them (docs/design.md §5.6 for int8)."""
    p = pixels.astype(np.float64)
    if precision == "int8" and int8_input == "shift":
        return (np.floor(p / 2) * 2.0 ** -7).astype(np.float32)
    mean, std = NORMALISATION[dataset]
    v = (p / 255.0 - mean) / std
    if precision == "int8":  # normalised: round(v · 2^(7 − ⌈log2 R⌉)), R over all 256 bytes
        r = max(abs((0 - mean) / std), abs((1 - mean) / std))
        k = 7 - math.ceil(math.log2(r))
        v = np.clip(_round_away(v * 2.0 ** k), -127, 127) * 2.0 ** -k
    return v.astype(np.float32)


def _data_root(run_dir, cfg):
    root = cfg.get("data", {}).get("root") or "."
    return root if os.path.isabs(root) else os.path.join(run_dir, root)


def test_set(run_dir):
    """(x, y): the run's test inputs (transformed as the run transforms them) and labels."""
    cfg = run_config(run_dir)
    data = cfg.get("data", {})
    dataset, limit = data.get("dataset", "mnist"), data.get("test_limit")
    precision = _precision(cfg)
    root = _data_root(run_dir, cfg)
    if dataset in NORMALISATION:
        x = load_idx(os.path.join(root, "t10k-images-idx3-ubyte.gz"))[:limit]
        y = load_idx(os.path.join(root, "t10k-labels-idx1-ubyte.gz"))[:limit]
        x = image_transform(x, dataset, precision, _int8(cfg).get("input", "shift"))
        return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y.astype(np.int64))
    if dataset != "modelnet40":
        raise InputError(f"{run_dir}/config.json: data.dataset is {dataset!r}, expected mnist, "
                         "fashion_mnist or modelnet40")
    try:
        import h5py
    except ImportError:
        raise InputError("PointNet runs need python3-h5py (apt-get install python3-h5py)")
    try:
        files = sorted(f for f in os.listdir(root)
                       if f.startswith("ply_data_test") and f.endswith(".h5"))
    except OSError as e:
        raise InputError(f"{root}: cannot list the data directory ({e.strerror})")
    if not files:
        raise InputError(f"{root}: no ply_data_test*.h5 files")
    points = data.get("points", 1024)
    xs, ys = [], []
    for name in files:
        with h5py.File(os.path.join(root, name), "r") as f:
            xs.append(np.asarray(f["data"][:, :points, :], dtype=np.float32))
            ys.append(np.asarray(f["label"]).reshape(-1).astype(np.int64))
    x, y = np.concatenate(xs)[:limit], np.concatenate(ys)[:limit]
    if precision == "int8":  # round(x · 2^6), exponent −6 (docs/design.md §5.6)
        x = (np.clip(_round_away(x.astype(np.float64) * 64), -127, 127) / 64).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def eval_batch_size(run_dir):
    """Evaluation batches are train.batch_size (int8 PointNet standardises per batch, §5.8)."""
    cfg = run_config(run_dir)
    b = cfg.get("train", {}).get("batch_size")
    return b or DEFAULT_BATCH[(cfg["model"]["arch"], _precision(cfg))]


def accuracy(model, x, y, batch_size=256):
    """Percent of argmax(model(x)) == y, evaluated in batches of batch_size, in order."""
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch_size):
            correct += (model(x[i:i + batch_size]).argmax(1) == y[i:i + batch_size]).sum().item()
    return 100.0 * correct / max(1, len(y))


def evaluate_run(run_dir):
    """(PyTorch's test accuracy, the run's own from summary.json, test samples)."""
    model = load_model(run_dir)
    x, y = test_set(run_dir)
    ours = accuracy(model, x, y, eval_batch_size(run_dir))
    theirs = read_json(os.path.join(run_dir, "summary.json")).get("test_accuracy")
    return ours, theirs, len(y)


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1] if argv else "usage: zotrain_torch.py RUN_DIR",
              file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else 2
    run_dir = argv[0]
    try:
        ours, theirs, n = evaluate_run(run_dir)
        cfg = run_config(run_dir)
    except InputError as e:
        print(f"zotrain_torch: {e}", file=sys.stderr)
        return 2
    what = f"{cfg['model']['arch']} {_precision(cfg)}"
    run = "n/a" if theirs is None else f"{theirs:.2f} %"
    print(f"{run_dir}: {what}, {n} test samples: PyTorch {ours:.2f} %, zotrain {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
