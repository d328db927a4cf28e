#!/usr/bin/python3
"""Checkpoints interoperate with PyTorch (Debian's python3-torch), both ways, on LeNet-5 FP32:

1. A zotrain run's checkpoint.safetensors is a plain state dict: loaded with strict names into an
   equivalent torch module, it gives the run's own test accuracy on the bundled test set.
2. Weights trained in PyTorch and saved as safetensors start a zotrain run (--init-from): the
   run's evaluation before its first step (train.eval_at_start) gives PyTorch's accuracy.

Accuracies agree to within one test image (FP32 sums may round differently and flip an argmax
that sits on a tie). No safetensors package is needed: the format (8-byte little-endian header
length, JSON header, raw data) is read and written here.

Usage: torch_interop.py ZOTRAIN SOURCE_DIR WORK_DIR   (exit 77 = skipped: no python3-torch)
"""

import gzip
import json
import os
import struct
import subprocess
import sys

import numpy as np

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch_interop: python3-torch is not installed; skipped")
    sys.exit(77)

MEAN, STD = 0.1307, 0.3081  # zotrain's MNIST normalisation (config/catalogue.cpp)


class LeNet5(nn.Module):
    """The module zotrain's LeNet-5 is (docs/design.md §2), with the same parameter names."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5, padding=2)
        self.fc1 = nn.Linear(16 * 7 * 7, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        b, e = t["data_offsets"]
        tensors[name] = torch.from_numpy(
            np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"]).copy())
    return tensors


def write_safetensors(path, tensors):
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


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def images(root, prefix):
    x = load_idx(os.path.join(root, prefix + "-images-idx3-ubyte.gz")).astype(np.float32)
    y = load_idx(os.path.join(root, prefix + "-labels-idx1-ubyte.gz")).astype(np.int64)
    x = (x / 255.0 - MEAN) / STD
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


def accuracy(model, x, y):
    with torch.no_grad():
        return 100.0 * (model(x).argmax(1) == y).double().mean().item()


def zotrain(binary, *args):
    subprocess.run([binary, *args], check=True, stdout=subprocess.DEVNULL)


def main():
    binary, src, work = sys.argv[1:4]
    config = os.path.join(src, "configs", "quickstart.json")
    data = os.path.join(src, "data", "mnist-subset")
    x_test, y_test = images(data, "t10k")
    tolerance = 100.0 / len(y_test) + 1e-9  # one image
    failures = []

    # 1. zotrain -> PyTorch.
    run = os.path.join(work, "zotrain-run")
    zotrain(binary, "--config", config, "--set", "data.root=" + data, "--set", "train.max_steps=60",
            "--output-dir", run, "--overwrite", "-q")
    with open(os.path.join(run, "summary.json")) as f:
        zt_acc = json.load(f)["test_accuracy"]
    model = LeNet5()
    model.load_state_dict(read_safetensors(os.path.join(run, "checkpoint.safetensors")), strict=True)
    torch_acc = accuracy(model, x_test, y_test)
    print(f"zotrain checkpoint: zotrain {zt_acc:.2f} %, PyTorch {torch_acc:.2f} %")
    if abs(zt_acc - torch_acc) > tolerance:
        failures.append("a zotrain checkpoint loaded into PyTorch gives another accuracy")

    # 2. PyTorch -> zotrain (--init-from): pre-train on a workstation, fine-tune on the board.
    torch.manual_seed(0)
    x_train, y_train = images(data, "train")
    model = LeNet5()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(60):
        b = slice(32 * step, 32 * (step + 1))
        opt.zero_grad()
        F.cross_entropy(model(x_train[b]), y_train[b]).backward()
        opt.step()
    torch_acc = accuracy(model, x_test, y_test)
    weights = os.path.join(work, "pytorch-lenet5.safetensors")
    write_safetensors(weights, model.state_dict())
    run = os.path.join(work, "zotrain-from-pytorch")
    zotrain(binary, "--config", config, "--set", "data.root=" + data, "--init-from", weights,
            "--set", "train.eval_at_start=true", "--set", "train.max_steps=1",
            "--output-dir", run, "--overwrite", "-q")
    with open(os.path.join(run, "metrics.jsonl")) as f:
        start = json.loads(f.readline())
    assert start["epoch"] == 0, start
    print(f"PyTorch weights: PyTorch {torch_acc:.2f} %, zotrain before its first step "
          f"{start['test_accuracy']:.2f} %")
    if abs(start["test_accuracy"] - torch_acc) > tolerance:
        failures.append("PyTorch weights loaded by zotrain give another accuracy")

    for f in failures:
        print("torch_interop: FAILED: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
