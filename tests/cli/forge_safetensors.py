#!/usr/bin/env python3
"""Writes an altered copy of a safetensors file, for the refusal tests.

Usage: forge_safetensors.py SRC DST CHANGE...
  meta:KEY=VALUE          set a __metadata__ entry
  truncate:N              drop the last N bytes
  header-length:past-end  the 8-byte header length points past the end of the file
  offsets:past-end        the last tensor's data_offsets lie past the end of the data
  offsets:overlap         the second tensor's data_offsets start 4 bytes inside the first's
  shape:wrong             the first tensor's shape holds one more element per row than its bytes
  dtype:I8                the first tensor's dtype says I8 (the byte count no longer matches)
  int8-min                the first I8 tensor's 3rd byte becomes -128 (outside the int8 range)
  transpose:NAME          tensor NAME's shape reversed (e.g. [120, 784] -> [784, 120]): the same
                          byte count, another meaning
  nan:NAME@I, inf:NAME@I  element I of F32 tensor NAME becomes NaN or +inf
  set:NAME@I=V            element I of F32 tensor NAME becomes V
  drop:NAME               tensor NAME removed (its bytes stay, unreferenced)
  extra:NAME              a tensor NAME added, a copy of the first tensor (another model's name)
"""
import json
import math
import struct
import sys


def main(src, dst, changes):
    b = open(src, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header, data = json.loads(b[8:8 + n]), b[8 + n:]
    tensors = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    cut, lie_length = 0, False
    for change in changes:
        what, _, arg = change.partition(":")
        if what == "meta":
            key, _, value = arg.partition("=")
            header.setdefault("__metadata__", {})[key] = value
        elif what == "truncate":
            cut = int(arg)
        elif what == "header-length":
            lie_length = True
        elif change == "offsets:past-end":
            begin, end = header[tensors[-1]]["data_offsets"]
            header[tensors[-1]]["data_offsets"] = [len(data) + 8, len(data) + 8 + end - begin]
        elif change == "offsets:overlap":
            begin, end = header[tensors[1]]["data_offsets"]
            header[tensors[1]]["data_offsets"] = [begin - 4, end - 4]
        elif change == "shape:wrong":
            header[tensors[0]]["shape"][-1] += 1
        elif change == "dtype:I8":
            header[tensors[0]]["dtype"] = "I8"
        elif change == "int8-min":
            first = next(k for k in tensors if header[k]["dtype"] == "I8")
            at = header[first]["data_offsets"][0] + 2
            data = data[:at] + b"\x80" + data[at + 1:]
        elif what == "transpose":
            header[arg]["shape"] = header[arg]["shape"][::-1]
        elif what in ("nan", "inf", "set"):
            name, _, index = arg.partition("@")
            index, _, value = index.partition("=")
            value = {"nan": math.nan, "inf": math.inf}.get(what) if what != "set" else float(value)
            assert header[name]["dtype"] == "F32", f"{name} is not F32"
            at = header[name]["data_offsets"][0] + 4 * int(index)
            data = data[:at] + struct.pack("<f", value) + data[at + 4:]
        elif what == "drop":
            del header[arg]
            tensors.remove(arg)
        elif what == "extra":
            first = dict(header[tensors[0]])
            begin, end = first["data_offsets"]
            first["data_offsets"] = [len(data), len(data) + end - begin]
            data += data[begin:end]
            header[arg] = first
            tensors.append(arg)
        else:
            sys.exit(f"forge_safetensors: unknown change {change}")
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    out = struct.pack("<Q", len(text)) + text + data
    if cut:
        out = out[:-cut]
    if lie_length:
        out = struct.pack("<Q", len(out)) + out[8:]
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
