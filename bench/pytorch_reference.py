#!/usr/bin/python3
"""PyTorch reference for zotrain: LeNet-5 on MNIST with Full BP, Full ZO and ElasticZO.

The opponent zotrain's speed and accuracy are measured against. It is written the way a
competent PyTorch user would write it, and made fast where that is cheap to do:

* Same model as zotrain (docs/design.md §2): conv1 1->6 5x5 pad 2, ReLU, maxpool 2, conv2 6->16
  5x5 pad 2, ReLU, maxpool 2, flatten 784, fc1 784->120, ReLU, fc2 120->84, ReLU, fc3 84->10;
  107,786 parameters; PyTorch's default initialisation.
* Full BP: forward, backward, torch.optim.SGD (no momentum, no weight decay).
* Full ZO / ElasticZO (docs/design.md §4, MeZO seed trick): per step draw a seed s;
  theta += eps*z, forward -> l+; theta -= 2*eps*z, forward -> l-; g = (l+ - l-)/(2 eps) clipped
  to +-grad_clip; theta += (eps - lr*g)*z. z is never stored: it is regenerated from s for each
  of the three passes with a torch.Generator and torch.randn(generator=...), parameter by
  parameter. The ZO part runs under torch.no_grad(). ElasticZO's backprop segment (layers
  C+1..L) uses the activations of the second (theta - eps*z) pass: autograd starts at the
  (detached) output of layer C, so the backward pass only covers the BP segment.
* FC layers: Debian's python3-torch is built with BLAS_INFO=generic, so nn.Linear goes to the
  slow reference BLAS while convolutions go through oneDNN (mkldnn). To be a fair opponent the
  FC layers can run through oneDNN as 1x1 convolutions ([B,784] -> [B,784,1,1] and
  Conv2d(784,120,1), ...). `--fc-impl auto` (the default) times both on this machine before
  training and uses the faster; the choice is printed and recorded in the JSON.

Timing: step_ms is the mean wall time of a training step (excluding batch assembly and eval),
taken after `--warmup` steps (oneDNN creates its primitives on first use). Phases (forward,
loss, zo_perturb, zo_update, backward, data) are timed with time.perf_counter, which costs
well under a microsecond per call.

Usage (Debian: apt-get install -y python3-torch):
  /usr/bin/python3 bench/pytorch_reference.py --data data/mnist --method elastic_zo \
      --partition 3 --epochs 1 --threads 2 --json
"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
NUM_PARAMETRIC = 5  # L for LeNet-5
PARTITION_NAMES = {"zo-feat-cls1": NUM_PARAMETRIC - 2, "zo-feat-cls2": NUM_PARAMETRIC - 1}


# ----------------------------------------------------------------------------------- data ---

def _open_idx(directory, stem):
    for name, opener in ((stem, open), (stem + ".gz", gzip.open)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with opener(path, "rb") as f:
                return f.read(), path
    # Also accept the dotted spelling (train-images.idx3-ubyte) some mirrors use.
    dotted = stem.replace("-idx", ".idx")
    for name, opener in ((dotted, open), (dotted + ".gz", gzip.open)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with opener(path, "rb") as f:
                return f.read(), path
    sys.exit(f"pytorch_reference: {stem}[.gz] not found in {directory}")


def load_idx(directory, stem, expect_ndim):
    raw, path = _open_idx(directory, stem)
    if len(raw) < 4:
        sys.exit(f"pytorch_reference: {path}: truncated header")
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08 or ndim != expect_ndim:
        sys.exit(f"pytorch_reference: {path}: not an unsigned-byte IDX file with {expect_ndim} dims")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    off = 4 + 4 * ndim
    count = int(np.prod(dims))
    if len(raw) != off + count:
        sys.exit(f"pytorch_reference: {path}: size {len(raw)} != {off + count} expected")
    return np.frombuffer(raw, dtype=np.uint8, offset=off).reshape(dims)


def load_split(directory, prefix):
    images = load_idx(directory, f"{prefix}-images-idx3-ubyte", 3)
    labels = load_idx(directory, f"{prefix}-labels-idx1-ubyte", 1)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"pytorch_reference: {prefix}: {images.shape[0]} images but {labels.shape[0]} labels")
    x = (images.astype(np.float32) / 255.0 - MNIST_MEAN) / MNIST_STD
    x = torch.from_numpy(np.ascontiguousarray(x)).unsqueeze(1)  # [N,1,28,28]
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


# ---------------------------------------------------------------------------------- model ---

class LeNet5(nn.Module):
    """LeNet-5 as a list of 5 parametric layers; FC layers as nn.Linear or 1x1 Conv2d.

    With fc_impl == "conv1x1" fc1..fc3 are Conv2d(in, out, 1) on [B, in, 1, 1] tensors, so they
    run through oneDNN like the convolutions. Default init of Conv2d(in,out,1) and
    Linear(in,out) is the same distribution (kaiming_uniform(a=sqrt(5)) with fan_in = in, bias
    U(-1/sqrt(in), 1/sqrt(in))).
    """

    def __init__(self, fc_impl="conv1x1"):
        super().__init__()
        self.fc_impl = fc_impl
        fc = (lambda i, o: nn.Conv2d(i, o, 1)) if fc_impl == "conv1x1" else nn.Linear
        self.layers = nn.ModuleList([
            nn.Conv2d(1, 6, 5, padding=2),
            nn.Conv2d(6, 16, 5, padding=2),
            fc(784, 120),
            fc(120, 84),
            fc(84, 10),
        ])

    def apply_layer(self, i, h):
        """Layer i (0-based) applied to the output of layer i-1 (pre-activation)."""
        if i > 0:
            h = F.relu(h)
            if i <= 2:
                h = F.max_pool2d(h, 2)
        if i == 2:
            h = h.reshape(h.shape[0], 784, 1, 1) if self.fc_impl == "conv1x1" else h.flatten(1)
        return self.layers[i](h)

    def forward_range(self, h, start, stop):
        for i in range(start, stop):
            h = self.apply_layer(i, h)
        return h

    def logits(self, out):
        return out.reshape(out.shape[0], 10)

    def forward(self, x):
        return self.logits(self.forward_range(x, 0, NUM_PARAMETRIC))


def pick_fc_impl(batch, rounds=5, reps=40):
    """Time forward+backward of both FC implementations on this machine; return the faster.

    The two are timed in alternating rounds and the best round of each is kept, so that load
    from other processes hurts both alike."""
    torch.manual_seed(0)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    models = {impl: LeNet5(impl) for impl in ("linear", "conv1x1")}

    def run(m, n):
        for _ in range(n):
            m.zero_grad(set_to_none=True)
            F.cross_entropy(m(x), y).backward()

    for m in models.values():
        run(m, 10)  # warm-up (oneDNN primitive creation)
    best = dict.fromkeys(models, math.inf)
    for _ in range(rounds):
        for impl, m in models.items():
            t0 = time.perf_counter()
            run(m, reps)
            best[impl] = min(best[impl], (time.perf_counter() - t0) / reps * 1e3)
    return min(best, key=best.get), best


# ------------------------------------------------------------------------------- training ---

PHASES = ("data", "forward", "loss", "zo_perturb", "zo_update", "backward")


class Trainer:
    def __init__(self, model, method, partition, lr, bp_lr, eps, grad_clip, seed):
        self.model, self.method, self.C = model, method, partition
        self.lr, self.bp_lr, self.eps, self.clip = lr, bp_lr, eps, grad_clip
        layers = list(model.layers)
        self.zo_params = [p for l in layers[:self.C] for p in l.parameters()]
        self.bp_params = [p for l in layers[self.C:] for p in l.parameters()]
        for p in self.zo_params:
            p.requires_grad_(False)
        self.opt = torch.optim.SGD(self.bp_params, lr=bp_lr) if self.bp_params else None
        self.seed_rng = np.random.default_rng(seed)
        self.gen = torch.Generator()
        self.z_buf = [torch.empty_like(p) for p in self.zo_params]  # randn(out=...) scratch
        self.g_abs_sum, self.clipped = 0.0, 0

    def set_lr(self, lr, bp_lr):
        self.lr, self.bp_lr = lr, bp_lr
        if self.opt:
            for g in self.opt.param_groups:
                g["lr"] = bp_lr

    @torch.no_grad()
    def _perturb(self, seed, scale):
        """theta_l += scale * z_l for l <= C, z regenerated from the step seed (MeZO trick)."""
        self.gen.manual_seed(seed)
        for p, z in zip(self.zo_params, self.z_buf):
            torch.randn(p.shape, generator=self.gen, out=z)
            p.add_(z, alpha=scale)

    def step(self, x, y, t):
        """One training step; t: dict of phase -> accumulated seconds. Returns (loss, correct)."""
        pc = time.perf_counter
        m, C, L = self.model, self.C, NUM_PARAMETRIC
        if C == 0:  # Full BP
            t0 = pc()
            self.opt.zero_grad(set_to_none=True)
            logits = m(x)
            t1 = pc()
            loss = F.cross_entropy(logits, y)
            t2 = pc()
            loss.backward()
            self.opt.step()
            t3 = pc()
            t["forward"] += t1 - t0
            t["loss"] += t2 - t1
            t["backward"] += t3 - t2
            return loss.item(), 0

        eps = self.eps
        seed = int(self.seed_rng.integers(0, 2**62))
        t0 = pc()
        self._perturb(seed, eps)
        t1 = pc()
        with torch.no_grad():
            logits = m.logits(m.forward_range(x, 0, L))
        t2 = pc()
        loss_plus = F.cross_entropy(logits, y).item()
        t3 = pc()
        self._perturb(seed, -2.0 * eps)
        t4 = pc()
        if C < L:
            if self.opt:
                self.opt.zero_grad(set_to_none=True)
            with torch.no_grad():
                h = m.forward_range(x, 0, C)
            # Autograd only for the BP segment: it starts at layer C's (detached) output.
            logits = m.logits(m.forward_range(h.detach(), C, L))
        else:
            with torch.no_grad():
                logits = m.logits(m.forward_range(x, 0, L))
        t5 = pc()
        loss = F.cross_entropy(logits, y)
        loss_minus = loss.item()
        g = (loss_plus - loss_minus) / (2.0 * eps)
        if abs(g) > self.clip:
            self.clipped += 1
        g = max(-self.clip, min(self.clip, g))
        self.g_abs_sum += abs(g)
        t6 = pc()
        self._perturb(seed, eps - self.lr * g)  # merged restore + update
        t7 = pc()
        if C < L:
            loss.backward()
            self.opt.step()
        t8 = pc()
        t["zo_perturb"] += (t1 - t0) + (t4 - t3)
        t["forward"] += (t2 - t1) + (t5 - t4)
        t["loss"] += (t3 - t2) + (t6 - t5)
        t["zo_update"] += t7 - t6
        t["backward"] += t8 - t7
        return 0.5 * (loss_plus + loss_minus), 0


@torch.no_grad()
def evaluate(model, x, y, batch=1000):
    correct, loss_sum = 0, 0.0
    for i in range(0, x.shape[0], batch):
        logits = model(x[i:i + batch])
        loss_sum += F.cross_entropy(logits, y[i:i + batch], reduction="sum").item()
        correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    return correct / x.shape[0], loss_sum / x.shape[0]


def parse_partition(text, method):
    if method == "full_bp":
        return 0
    if method == "full_zo":
        return NUM_PARAMETRIC
    if text is None:
        return PARTITION_NAMES["zo-feat-cls1"]
    c = PARTITION_NAMES.get(text.lower())
    if c is None:
        try:
            c = int(text)
        except ValueError:
            sys.exit(f"pytorch_reference: bad --partition {text!r}")
    if not 0 < c < NUM_PARAMETRIC:
        sys.exit(f"pytorch_reference: elastic_zo needs 0 < C < {NUM_PARAMETRIC}, got {c}")
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="directory with the MNIST IDX files (plain or .gz)")
    ap.add_argument("--method", choices=("full_bp", "full_zo", "elastic_zo"), required=True)
    ap.add_argument("--partition", default=None,
                    help="C for elastic_zo: 1..4 or zo-feat-cls1 (3) / zo-feat-cls2 (4); default cls1")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.01, help="ZO learning rate")
    ap.add_argument("--bp-lr", type=float, default=0.05, help="learning rate of the BP part / Full BP")
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--grad-clip", type=float, default=100.0)
    ap.add_argument("--decay-factor", type=float, default=0.8)
    ap.add_argument("--decay-every", type=int, default=10, help="epochs (0 = never)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after K steps in total (0 = no limit)")
    ap.add_argument("--warmup", type=int, default=20, help="steps left out of step_ms")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fc-impl", choices=("auto", "conv1x1", "linear"), default="auto",
                    help="FC layers as nn.Linear (generic BLAS) or 1x1 Conv2d (oneDNN); auto: time both")
    ap.add_argument("--no-eval", action="store_true", help="skip the test-set evaluation")
    ap.add_argument("--json", action="store_true", help="print one final JSON line")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    say = (lambda *s: print(*s, file=sys.stderr, flush=True)) if a.json else (lambda *s: print(*s, flush=True))

    C = parse_partition(a.partition, a.method)
    fc_times = None
    fc_impl = a.fc_impl
    if fc_impl == "auto":
        fc_impl, fc_times = pick_fc_impl(a.batch_size)
        say("fc-impl auto: fwd+bwd ms/step " + ", ".join(f"{k} {v:.3f}" for k, v in fc_times.items())
            + f" -> {fc_impl}")
    say(f"torch {torch.__version__}, threads {torch.get_num_threads()}, mkldnn "
        f"{torch.backends.mkldnn.is_available()}, FC layers as "
        + ("1x1 Conv2d (oneDNN)" if fc_impl == "conv1x1" else "nn.Linear (torch BLAS)"))

    x_train, y_train = load_split(a.data, "train")
    x_test, y_test = load_split(a.data, "t10k")

    torch.manual_seed(a.seed)
    model = LeNet5(fc_impl)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == 107786, n_params
    tr = Trainer(model, a.method, C, a.lr, a.bp_lr, a.eps, a.grad_clip, a.seed)
    say(f"method {a.method}, C={C}, params {n_params} (ZO {sum(p.numel() for p in tr.zo_params)}), "
        f"batch {a.batch_size}, lr {a.lr}, bp_lr {a.bp_lr}, eps {a.eps}, grad_clip {a.grad_clip}")

    B = a.batch_size
    steps_per_epoch = x_train.shape[0] // B  # drop last
    perm_rng = np.random.default_rng(a.seed ^ 0xDA7A)
    phases = dict.fromkeys(PHASES, 0.0)
    step_times = []
    total_steps, epochs_run, acc, test_loss = 0, 0, None, None
    epoch_secs = []
    stopped = False
    for epoch in range(a.epochs):
        k = epoch // a.decay_every if a.decay_every > 0 else 0
        tr.set_lr(a.lr * a.decay_factor ** k, a.bp_lr * a.decay_factor ** k)
        perm = torch.from_numpy(perm_rng.permutation(x_train.shape[0]))
        loss_sum, n_loss = 0.0, 0
        te0 = time.perf_counter()
        for s in range(steps_per_epoch):
            if a.max_steps and total_steps >= a.max_steps:
                stopped = True
                break
            t0 = time.perf_counter()
            idx = perm[s * B:(s + 1) * B]
            xb, yb = x_train.index_select(0, idx), y_train.index_select(0, idx)
            t1 = time.perf_counter()
            loss, _ = tr.step(xb, yb, phases)
            t2 = time.perf_counter()
            phases["data"] += t1 - t0
            step_times.append(t2 - t1)
            loss_sum += loss
            n_loss += 1
            total_steps += 1
        epoch_secs.append(time.perf_counter() - te0)
        epochs_run += 1
        if not a.no_eval:
            acc, test_loss = evaluate(model, x_test, y_test)
        msg = (f"epoch {epoch + 1}/{a.epochs}: steps {n_loss}, train loss "
               f"{loss_sum / max(n_loss, 1):.4f}, {epoch_secs[-1]:.2f} s")
        if acc is not None:
            msg += f", test acc {acc * 100:.2f}% (loss {test_loss:.4f})"
        say(msg)
        if stopped:
            break

    timed = step_times[a.warmup:] if len(step_times) > a.warmup else step_times
    step_ms = 1e3 * sum(timed) / max(len(timed), 1)
    full_epoch = not stopped and epochs_run > 0
    data_ms = 1e3 * phases["data"] / max(total_steps, 1)
    epoch_seconds = (sum(epoch_secs) / len(epoch_secs) if full_epoch
                     else steps_per_epoch * (step_ms + data_ms) / 1e3)
    step_total = sum(step_times)
    shares = {k: (phases[k] / step_total if step_total > 0 else 0.0) for k in PHASES if k != "data"}
    say(f"steps {total_steps}, step {step_ms:.3f} ms (mean after {min(a.warmup, len(step_times))} "
        f"warm-up steps), epoch {epoch_seconds:.2f} s" + ("" if full_epoch else " (extrapolated)"))
    say("phases ms/step: " + ", ".join(f"{k} {1e3 * phases[k] / max(total_steps, 1):.3f}" for k in PHASES))
    if a.json:
        out = {
            "method": a.method, "partition": C, "threads": a.threads, "batch_size": B,
            "steps": total_steps, "step_ms": step_ms,
            "epoch_seconds": epoch_seconds, "epoch_extrapolated": not full_epoch,
            "test_accuracy": acc,
            "fc_impl": fc_impl, "fc_impl_ms": fc_times,
            "phase_ms_per_step": {k: 1e3 * phases[k] / max(total_steps, 1) for k in PHASES},
            "phase_share_of_step": shares,
            "lr": a.lr, "bp_lr": a.bp_lr, "eps": a.eps, "grad_clip": a.grad_clip,
            "mean_abs_g": tr.g_abs_sum / max(total_steps, 1) if C > 0 else None,
            "clipped_steps": tr.clipped if C > 0 else None,
            "torch": torch.__version__,
        }
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
