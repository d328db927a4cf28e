#!/usr/bin/env python3
"""Checks what an interrupted run left in its output directory, independently of zotrain.

checkpoint.safetensors (if there) must be whole: the header length within the file, the header
JSON, the tensors' data_offsets tiling the data exactly; the optimizer file it names must be of
its step (optimizer.safetensors, or optimizer.safetensors.next between the two renames of a
checkpoint write). config.json and summary.json (if there) must parse, and every line of
steps.jsonl and metrics.jsonl. Exits 1 with the reason, else prints
"CHECKPOINT_STEP LAST_LOGGED_STEP WRITING": the checkpoint's global step (0: none), the last step
in steps.jsonl (0: none) and the partial files of a checkpoint write with their mtimes ("-": none).

Usage: check_run_dir.py DIR
"""
import json
import os
import struct
import sys


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def metadata(path):
    b = open(path, "rb").read()
    if len(b) < 8:
        fail(f"{path}: {len(b)} bytes, shorter than the header length")
    n = struct.unpack("<Q", b[:8])[0]
    if 8 + n > len(b):
        fail(f"{path}: header length {n} exceeds the file ({len(b)} bytes)")
    try:
        header = json.loads(b[8:8 + n])
    except ValueError as e:
        fail(f"{path}: header is not JSON: {e}")
    end = 0
    for begin, stop in sorted(tuple(v["data_offsets"]) for k, v in header.items() if k != "__metadata__"):
        if begin != end or stop < begin:
            fail(f"{path}: data_offsets [{begin}, {stop}) after {end}")
        end = stop
    if end != len(b) - 8 - n:
        fail(f"{path}: the tensors cover {end} of {len(b) - 8 - n} data bytes")
    return header.get("__metadata__", {})


def main(d):
    if not os.path.isdir(d):  # e.g. killed before it made the directory
        print(0, 0, "-")
        return
    step = 0
    ckpt = os.path.join(d, "checkpoint.safetensors")
    if os.path.exists(ckpt):
        m = metadata(ckpt)
        step = int(m["global_step"])
        if "optimizer_file" in m:
            opt = os.path.join(d, m["optimizer_file"])
            steps = [metadata(f).get("global_step") for f in (opt, opt + ".next") if os.path.exists(f)]
            if m["global_step"] not in steps:
                fail(f"{ckpt}: step {step}, but its optimizer state is of step(s) {steps}")
    for name in ("config.json", "summary.json"):
        if os.path.exists(os.path.join(d, name)):
            try:
                json.load(open(os.path.join(d, name)))
            except ValueError as e:
                fail(f"{d}/{name}: not JSON: {e}")
    last = 0
    for name in ("steps.jsonl", "metrics.jsonl"):
        if not os.path.exists(os.path.join(d, name)):
            continue
        for line in open(os.path.join(d, name)):
            try:
                record = json.loads(line)
            except ValueError:
                fail(f"{d}/{name}: a partial line: {line!r}")
            if name == "steps.jsonl":
                last = record["step"]
    writing = [f"{f}@{os.stat(os.path.join(d, f)).st_mtime_ns}" for f in sorted(os.listdir(d))
               if f in ("checkpoint.safetensors.tmp", "optimizer.safetensors.next",
                        "optimizer.safetensors.next.tmp")]
    print(step, last, ",".join(writing) or "-")


if __name__ == "__main__":
    main(sys.argv[1])
