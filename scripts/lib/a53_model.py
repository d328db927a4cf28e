#!/usr/bin/env python3
"""Helper of scripts/a53-model.sh: a Cortex-A53 cycle estimate of one zotrain training step.

Subcommands (the shell script drives them; see its header for the model and its limits):
  markers NM_OUTPUT            phase-marker table for scripts/lib/a53_trace.awk
  analyze REDUCED JSON ...     per-block llvm-mca cycles x executions -> one JSON result
  report JSON...               markdown tables of the results (stdout)
  sanity                       llvm-mca on kernels with a published A53 throughput
  compare BENCH JSON...        a board's `zotrain bench --json` against the results (stdout)

Per block (a qemu translated block = a straight-line run of guest instructions ending in a
branch): cycles = llvm-mca "Total Cycles" / iterations of the block repeated back to back
(-mcpu=cortex-a53, its in-order model), times the block's executions in the step.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

PHASES = ["forward", "zo_perturb", "zo_update", "backward", "loss", "other"]

# Driver functions whose execution switches the phase (sticky; see a53_trace.awk). Matched on
# demangled names, first match wins. Kernels (zt::kernels::*) are never markers: they are
# charged to the phase of whichever driver called them (gemm runs in forward and backward).
MARKERS = [
    (r"^zt::train::.*::(estimate|integer_sign)\(", "loss"),
    (r"softmax_xent|xent_error_s8|zo_sign_s8|int8_loss_sum|^zt::train::float_sign\(", "loss"),
    (r"^zt::train::.*::(perturb)\(", "zo_perturb"),
    (r"^zt::train::.*::(update|zo_update)\(", "zo_update"),
    (r"^zt::train::BpOptimizer::", "backward"),
    (r"^zt::(nn|train)::.*::(backward|backprop|backward_tail|backward_points_streamed)\(", "backward"),
    (r"^zt::(nn|train)::.*::(forward|probe)\(", "forward"),
    (r"^zt::train::.*::step\(|^zt::train::int8_step\(|^zt::train::Int8Trainer::begin\(", "other"),
    (r"^zt::cli::", "other"),
]

# The LeNet-5 of src/nn/lenet5.cpp: conv1 1->6 5x5 pad 2 on 28x28, pool, conv2 6->16 5x5 pad 2,
# pool, fc1 784->120, fc2 120->84, fc3 84->10, ReLU after conv1, conv2, fc1, fc2.
# (name, input elements, output elements per sample, FP32 params, int8 params (no biases))
LAYERS = [
    ("conv1", 784, 4704, 156, 150), ("relu1", 4704, 4704, 0, 0), ("pool1", 4704, 1176, 0, 0),
    ("conv2", 1176, 3136, 2416, 2400), ("relu2", 3136, 3136, 0, 0), ("pool2", 3136, 784, 0, 0),
    ("fc1", 784, 120, 94200, 94080), ("relu3", 120, 120, 0, 0),
    ("fc2", 120, 84, 10164, 10080), ("relu4", 84, 84, 0, 0), ("fc3", 84, 10, 850, 840),
]
PARAMETRIC = [i for i, l in enumerate(LAYERS) if l[3] > 0]  # L = 5
ZO_LAYERS = {"full_bp": 0, "full_zo": 5, "cls1": 3, "cls2": 4}  # C of src/config/methods.cpp
BANDWIDTH = 1.3e9  # bytes/s, assumed sustained LPDDR2 bandwidth of the Pi Zero 2 W
CLOCK = 1.0e9  # Hz


def demangle(names):
    names = list(names)
    if not names:
        return {}
    tool = "aarch64-linux-gnu-c++filt"
    try:
        out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                             text=True, check=True).stdout.splitlines()
    return dict(zip(names, out))


def phase_of(demangled):
    for pat, ph in MARKERS:
        if re.search(pat, demangled):
            return ph
    return None


def cmd_markers(args):
    syms = set()
    with open(args.nm_output) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "tTwW":
                syms.add(p[2])
    dm = demangle(sorted(syms))
    for s in sorted(syms):
        ph = phase_of(dm[s])
        if ph:
            print(f"{s}\t{ph}")


# ---------------------------------------------------------------------------------------------
# qemu (capstone) disassembly -> assembly llvm-mc accepts.
BRANCHY = re.compile(r"^(b|bl|b\.[a-z]+|cbz|cbnz|tbz|tbnz|adr|adrp)$")
LITERAL_LOADS = re.compile(r"^(ldr|ldrsw|prfm)$")
ABS = re.compile(r"#?0x[0-9a-f]+$")
CALLS = {"bl": "b", "blr": "br"}


def to_mca(insns, label):
    """Absolute targets (branches, adr/adrp, literal loads) become `label`, defined at the top of
    the block; llvm-mca ignores control flow (it repeats the block as straight-line code), so
    only the instruction's class matters, not where it jumps. Calls become plain branches (bl ->
    b, blr -> br): llvm-mca does not model calls and charges each a 100-cycle placeholder latency
    ("call instructions are not correctly modeled"), where the A53 predicts a direct call and
    its return like any taken branch."""
    out = [f"{label}:"]
    for ins in insns:
        p = ins.split(None, 1)
        mn = p[0]
        ops = p[1].strip() if len(p) > 1 else ""
        mn = CALLS.get(mn, mn)
        if ops and (BRANCHY.match(mn) or (LITERAL_LOADS.match(mn) and "[" not in ops)):
            ops = ABS.sub(label, ops)
        out.append(f"{mn} {ops}".rstrip())
    return out


def cache_load(path):
    c = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if len(p) == 4:
                    c[p[0]] = (float(p[1]), int(p[2]), int(p[3]))
    return c


def run_mca(blocks, iterations, mcpu="cortex-a53"):
    """blocks: {key: [asm lines]} -> {key: (cycles per iteration, kept insns, total insns)}.
    One llvm-mca run per chunk of blocks, one code region per block. Lines llvm-mc rejects are
    dropped (counted); an instruction the A53 model does not support aborts the run: it is
    commented out everywhere and the chunk re-run."""
    res = {}
    keys = list(blocks)
    banned = set()
    for c0 in range(0, len(keys), 400):
        chunk = keys[c0:c0 + 400]
        for _attempt in range(60):
            text, line_of = [], {}
            for i, k in enumerate(chunk):
                text.append(f"# LLVM-MCA-BEGIN r{i}")
                for ln in blocks[k]:
                    if ln.split(None, 1)[0] in banned:
                        text.append("nop // " + ln)  # same issue slot as a simple ALU op
                    else:
                        text.append(ln)
                    line_of[len(text)] = i
                text.append("# LLVM-MCA-END")
            r = subprocess.run(["llvm-mca", "-mtriple=aarch64", f"-mcpu={mcpu}",
                                f"-iterations={iterations}", "-instruction-info=false",
                                "-resource-pressure=false", "-"],
                               input="\n".join(text) + "\n", capture_output=True, text=True)
            m = re.search(r"unsupported instruction.*?\n\s*(\S+)", r.stderr, re.S)
            if r.returncode != 0 and m and m.group(1) not in banned:
                banned.add(m.group(1))
                continue
            if r.returncode != 0 and "Code Region" not in r.stdout:
                raise RuntimeError("llvm-mca failed: " + r.stderr[-2000:])
            dropped = defaultdict(int)
            for em in re.finditer(r"<stdin>:(\d+):\d+: error", r.stderr):
                ln = int(em.group(1))
                if ln in line_of:
                    dropped[line_of[ln]] += 1
            for em in re.finditer(r"\[(\d+)\] Code Region - r(\d+)\s+Iterations:\s+(\d+)\s+"
                                  r"Instructions:\s+(\d+)\s+Total Cycles:\s+(\d+)", r.stdout):
                i = int(em.group(2))
                it, ninsn, cyc = int(em.group(3)), int(em.group(4)), int(em.group(5))
                total = len(blocks[chunk[i]]) - 1  # minus the label line
                res[chunk[i]] = (cyc / it, ninsn // max(it, 1), total)
            for i, k in enumerate(chunk):  # a region left empty by errors
                if k not in res:
                    res[k] = (0.0, 0, len(blocks[k]) - 1)
            break
        else:
            raise RuntimeError("llvm-mca: too many unsupported instructions")
    return res, banned


def cmd_analyze(args):
    execs = []  # (pc, phase, count, sym)
    blocks, bsym = {}, {}
    cur = None
    steps = 0
    with open(args.reduced) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "I":
                blocks[cur].append(p[1].strip())
            elif p[0] == "E":
                execs.append((p[1], p[2], int(p[3]), p[4] if len(p) > 4 else ""))
            elif p[0] == "B":
                cur = p[1]
                blocks[cur] = []
                bsym[cur] = p[2] if len(p) > 2 else ""
            elif p[0] == "S":
                steps = int(p[1])
    if steps != 3:
        sys.exit(f"a53-model: expected 3 step boundaries in the trace, saw {steps}")
    per_block = defaultdict(int)
    for pc, ph, c, _ in execs:
        per_block[pc] += c * len(blocks.get(pc, []))
    total_insns = sum(per_block.values())
    order = sorted(per_block, key=lambda pc: -per_block[pc])
    hot, acc = [], 0
    for pc in order:
        if acc >= args.coverage * total_insns:
            break
        hot.append(pc)
        acc += per_block[pc]
    # llvm-mca per distinct hot block, cached by the hash of its converted text.
    cache = cache_load(args.cache)
    asm, key_of = {}, {}
    for pc in hot:
        body = to_mca(blocks[pc], ".Lblk")
        h = hashlib.sha1(("\n".join(body) + f"|{args.iterations}").encode()).hexdigest()[:20]
        key_of[pc] = h
        if h not in cache and h not in asm:
            asm[h] = [ln.replace(".Lblk", f".Lb{len(asm)}") for ln in body]
    fresh, banned = run_mca(asm, args.iterations) if asm else ({}, set())
    if fresh and args.cache:
        os.makedirs(os.path.dirname(args.cache) or ".", exist_ok=True)
        with open(args.cache, "a") as f:
            for h, (cyc, kept, total) in fresh.items():
                f.write(f"{h}\t{cyc}\t{kept}\t{total}\n")
    cache.update(fresh)
    # Cycles per execution of each hot block; a block llvm-mc could not fully parse is scaled by
    # total/kept instructions.
    cyc_of, dropped_insns = {}, 0
    hot_insns = hot_cycles = 0.0
    for pc in hot:
        cyc, kept, total = cache[key_of[pc]]
        n = len(blocks[pc])
        if kept > 0:
            cyc_of[pc] = cyc * n / kept
        dropped_insns += (n - kept) * per_block[pc] / max(n, 1)
        if pc in cyc_of:
            hot_insns += per_block[pc]
            hot_cycles += cyc_of[pc] * per_block[pc] / n
    ipc = hot_insns / hot_cycles if hot_cycles else 1.0
    names = demangle({s for _, _, _, s in execs if s})
    by_phase = defaultdict(float)
    by_func = defaultdict(lambda: [0.0, 0, defaultdict(float)])
    total_cycles = 0.0
    for pc, ph, c, s in execs:
        n = len(blocks.get(pc, []))
        cyc = cyc_of[pc] * c if pc in cyc_of else n * c / ipc  # cold: average IPC of the hot
        total_cycles += cyc
        by_phase[ph] += cyc
        fn = names.get(s, s) if s else "[no symbol: shared library / ld.so]"
        by_func[fn][0] += cyc
        by_func[fn][1] += n * c
        by_func[fn][2][ph] += cyc
    funcs = sorted(by_func.items(), key=lambda kv: -kv[1][0])
    out = {
        "precision": args.precision, "method": args.method, "batch": args.batch,
        "insns": total_insns, "cycles": total_cycles, "blocks": len(per_block),
        "hot_blocks": len(hot), "hot_insn_share": hot_insns / total_insns if total_insns else 0,
        "cold_ipc": ipc, "dropped_insns": dropped_insns, "banned": sorted(banned),
        "phases": {ph: by_phase.get(ph, 0.0) for ph in PHASES},
        "functions": [{"name": fn, "cycles": v[0], "insns": v[1],
                       "phase": max(v[2], key=v[2].get)} for fn, v in funcs[:args.top]],
        "traffic": traffic(args.precision, args.method, args.batch),
    }
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"a53-model: {args.precision} {args.method} batch {args.batch}: {total_insns} insns, "
          f"{total_cycles:.0f} cycles, {len(hot)}/{len(per_block)} blocks by llvm-mca "
          f"({100 * hot_insns / max(total_insns, 1):.2f} % of insns), {len(fresh)} new",
          file=sys.stderr)


def traffic(precision, method, batch):
    """Coarse DRAM bytes per phase of one step (no reuse through the caches between layers or
    passes: an upper bound on what the caches leave to DRAM). e = bytes per activation element
    (FP32 4, int8 1; int8's int32 accumulator buffers not counted), w = bytes per weight."""
    e = 4 if precision == "fp32" else 1
    w = 4 if precision == "fp32" else 1
    g = 4  # gradient accumulators: FP32 floats, int8 int32
    pidx = 3 if precision == "fp32" else 4
    C = ZO_LAYERS[method]
    first_bp = PARAMETRIC[C] if C < len(PARAMETRIC) else len(LAYERS)
    params = sum(l[pidx] for l in LAYERS)
    zo_params = sum(LAYERS[i][pidx] for i in PARAMETRIC[:C])
    bp_params = params - zo_params
    act = sum(l[1] + l[2] for l in LAYERS)  # each layer reads its input, writes its output
    forwards = 2 if C > 0 else 1  # two-sided SPSA: the + and the - pass
    t = {}
    t["forward"] = forwards * (params * w + batch * act * e)
    t["zo_perturb"] = 2 * (2 * zo_params * w)  # +eps z and -2 eps z: read + write theta_ZO
    t["zo_update"] = 2 * zo_params * w  # restore + update merged: one read + write
    bp_act = sum(4 * (l[1] + l[2]) // 2 for l in LAYERS[first_bp:])  # x, y, dy read; dx written
    t["backward"] = (batch * bp_act * e + bp_params * (w + g)  # weights read, gradients written
                     + bp_params * (2 * w + g)) if C < len(PARAMETRIC) else 0  # optimizer
    t["loss"] = batch * 10 * (e + 4) * forwards
    t["other"] = 0
    return t


# ---------------------------------------------------------------------------------------------
def fmt_int(x):
    return f"{x:,.0f}"


def cmd_report(args):
    res = []
    for p in args.jsons:
        with open(p) as f:
            res.append(json.load(f))
    P = print
    P("### Predicted Cortex-A53 cycles of one training step (1 core, 1 GHz, L1 hits assumed)\n")
    P("| precision | method | batch | guest insns | A53 cycles/step | cycles/sample | ms/step @1 GHz"
      " | IPC | forward | ZO perturb | ZO update | backward | loss | other |")
    P("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in res:
        c = r["cycles"]
        sh = [100 * r["phases"][ph] / c for ph in PHASES]
        P(f"| {r['precision']} | {r['method']} | {r['batch']} | {fmt_int(r['insns'])} | {fmt_int(c)} "
          f"| {fmt_int(c / r['batch'])} | {c / CLOCK * 1e3:.2f} | {r['insns'] / c:.2f} | "
          + " | ".join(f"{s:.1f} %" for s in sh) + " |")
    P("\nCoverage: blocks modelled by llvm-mca / blocks executed, share of the step's instructions"
      " they cover; the rest is charged at the modelled blocks' average IPC.\n")
    P("| precision | method | batch | llvm-mca blocks | insn coverage | IPC of the rest |"
      " insns llvm-mc rejected |")
    P("|---|---|---:|---:|---:|---:|---:|")
    for r in res:
        P(f"| {r['precision']} | {r['method']} | {r['batch']} | {r['hot_blocks']}/{r['blocks']} | "
          f"{100 * r['hot_insn_share']:.2f} % | {r['cold_ipc']:.2f} | {fmt_int(r['dropped_insns'])}"
          + (f" (unsupported by the A53 model, as nop: {' '.join(r['banned'])})" if r['banned'] else "")
          + " |")
    # int8 / FP32 per sample.
    by = {(r["precision"], r["method"], r["batch"]): r for r in res}
    methods = [m for m in ["full_bp", "full_zo", "cls1", "cls2"] if any(k[1] == m for k in by)]
    fb = sorted({k[2] for k in by if k[0] == "fp32"})
    ib = sorted({k[2] for k in by if k[0] == "int8"})
    pairs = [(f, i) for f in fb for i in ib if f == i or (f, i) == (32, 256)]  # equal / paper
    if pairs:
        P("\n### int8 / FP32 predicted cycles per sample\n")
        P("| method | " + " | ".join(f"int8@{i} / fp32@{f}" for f, i in pairs) + " |")
        P("|---|" + "---:|" * len(pairs))
        for m in methods:
            cells = []
            for f, i in pairs:
                a, b = by.get(("int8", m, i)), by.get(("fp32", m, f))
                cells.append(f"{(a['cycles'] / i) / (b['cycles'] / f):.3f}" if a and b else "-")
            P(f"| {m} | " + " | ".join(cells) + " |")
    fits = []
    for prec in ("fp32", "int8"):
        bs = sorted({k[2] for k in by if k[0] == prec})
        if len(bs) >= 2:
            b1, b2 = bs[0], bs[-1]
            for m in methods:
                r1, r2 = by.get((prec, m, b1)), by.get((prec, m, b2))
                if r1 and r2:
                    per = (r2["cycles"] - r1["cycles"]) / (b2 - b1)
                    fits.append((prec, m, b1, b2, r1["cycles"] - per * b1, per))
    if fits:
        P("\n### Fixed + per-sample split (straight line through two batches)\n")
        P("| precision | method | batches | fixed cycles/step | cycles per extra sample |")
        P("|---|---|---|---:|---:|")
        for prec, m, b1, b2, fixed, per in fits:
            P(f"| {prec} | {m} | {b1}, {b2} | {fmt_int(fixed)} | {fmt_int(per)} |")
    P(f"\n### Memory traffic estimate per phase (coarse, analytic; {BANDWIDTH / 1e9:.1f} GB/s assumed)\n")
    P("Bytes a phase must move if nothing stays in cache between layers and passes (weights read"
      " once per pass, each layer's input read and output written, perturbation = read + write of"
      " the ZO weights, backward = x, y, dy read and dx written per BP layer + weights read,"
      " gradients written, optimizer read/write). Memory-bound (**MB**) when the transfer time at"
      " the assumed bandwidth exceeds the phase's predicted compute cycles.\n")
    P("| precision | method | batch | " + " | ".join(
        f"{ph} KB / mem-cycles vs compute" for ph in PHASES[:5]) + " |")
    P("|---|---|---:|" + "---|" * 5)
    for r in res:
        cells = []
        for ph in PHASES[:5]:
            b = r["traffic"][ph]
            mc = b / BANDWIDTH * CLOCK
            cc = r["phases"][ph]
            if b == 0 and cc == 0:
                cells.append("-")
                continue
            flag = " **MB**" if mc > cc else ""
            cells.append(f"{b / 1024:,.1f} / {mc / 1e6:.2f}M vs {cc / 1e6:.2f}M{flag}")
        P(f"| {r['precision']} | {r['method']} | {r['batch']} | " + " | ".join(cells) + " |")
    P(f"\n### Top {args.top} functions per configuration (predicted cycles)\n")
    for r in res:
        P(f"**{r['precision']} {r['method']} batch {r['batch']}** "
          f"({fmt_int(r['cycles'])} cycles)\n")
        P("| # | function | phase | cycles | share | guest insns | IPC |")
        P("|---:|---|---|---:|---:|---:|---:|")
        for i, fn in enumerate(r["functions"][:args.top]):
            name = fn["name"]
            name = re.sub(r"\(anonymous namespace\)", "(anon)", name)
            if len(name) > 110:
                name = name[:107] + "..."
            name = name.replace("|", "\\|")
            P(f"| {i + 1} | `{name}` | {fn['phase']} | {fmt_int(fn['cycles'])} | "
              f"{100 * fn['cycles'] / r['cycles']:.1f} % | {fmt_int(fn['insns'])} | "
              f"{fn['insns'] / fn['cycles']:.2f} |")
        P("")


# ---------------------------------------------------------------------------------------------
FMLA_SRC = ("one 128-bit FMLA issued per cycle = 8 FP32 FLOP/cycle: OpenBLAS PR #3457 gives a "
            "1-thread Cortex-A53 peak of 6.0 GFLOPS FP64 at 1.5 GHz (4 FLOP/cycle = one 2-lane FMLA "
            "per cycle); ncnn's arm-a53-a55-dual-issue notes issue FMLA.4S back to back")
SMULL_SRC = ("assumed one NEON instruction per cycle, as for FMLA: Arm publishes no Cortex-A53 "
             "instruction table (ComputeLibrary issue #843); = 16 int8 MACs per 3 cycles")
SANITY = [
    ("fmla v.4s, 16 independent accumulators", 16, 16.0, FMLA_SRC,
     [f"fmla v{i}.4s, v24.4s, v25.4s" for i in range(16)]),
    ("fmla v.4s, 8 independent accumulators", 8, 8.0, FMLA_SRC,
     [f"fmla v{i}.4s, v24.4s, v25.4s" for i in range(8)]),
    ("smull 8h + smlal2 8h + sadalp 4s, 8 chains", 24, 24.0, SMULL_SRC,
     [f"smull v{i}.8h, v24.8b, v25.8b" for i in range(8)]
     + [f"smlal2 v{i}.8h, v26.16b, v27.16b" for i in range(8)]
     + [f"sadalp v{16 + i}.4s, v{i}.8h" for i in range(8)]),
    ("smull 8h + smlal2 8h + sadalp 4s, 4 chains", 12, 12.0, SMULL_SRC,
     [f"smull v{i}.8h, v24.8b, v25.8b" for i in range(4)]
     + [f"smlal2 v{i}.8h, v26.16b, v27.16b" for i in range(4)]
     + [f"sadalp v{16 + i}.4s, v{i}.8h" for i in range(4)]),
]


def cmd_sanity(args):
    print("### Sanity check: llvm-mca -mcpu=cortex-a53 on loops with a known A53 throughput\n")
    print("| kernel | insns/iter | llvm-mca cycles/iter | published cycles/iter | llvm-mca / published"
          " | source of the published figure |")
    print("|---|---:|---:|---:|---:|---|")
    for name, n, pub, src, body in SANITY:
        res, _ = run_mca({"k": [".Lk:"] + body}, args.iterations)
        cyc = res["k"][0]
        print(f"| {name} | {n} | {cyc:.2f} | {pub:.2f} | {cyc / pub:.2f} | {src} |")


def cmd_compare(args):
    """A board's `zotrain bench --json` against the model's per-configuration JSONs: for every
    step the bench timed whose (precision, method, batch) the model has, board ms per step over
    the model's (cycles at --ghz, divided by threads x --efficiency when the bench ran more than
    one thread), and the phase shares side by side. Only the trainers' path (best_path) counts."""
    with open(args.bench) as f:
        bench = json.load(f)
    models = {}
    for path in args.jsons:
        with open(path) as f:
            m = json.load(f)
        models[(m["precision"], m["method"], int(m["batch"]))] = m
    threads = int(bench.get("threads", 1))
    scale = 1.0 if threads <= 1 else threads * args.efficiency
    rows = []
    best = bench.get("best_path")
    for st in bench.get("steps", []):
        if best is not None and st.get("path", best) != best:
            continue  # the rows repeated on `portable` for the speed-up table
        key = (st["precision"], st["method"], int(st["batch"]))
        if key not in models or st.get("ms_per_step", 0) <= 0:
            continue
        m = models[key]
        model_ms = m["cycles"] / (args.ghz * 1e6) / scale
        cyc = sum(m["phases"].values())
        share = lambda ph: sum(m["phases"].get(p, 0.0) for p in ph) / cyc  # noqa: E731
        bshare = lambda ph: sum(st["phases"].get(p, {}).get("share", 0.0) for p in ph)  # noqa: E731
        rows.append((key, st["ms_per_step"], model_ms, bshare(["forward"]), share(["forward"]),
                     bshare(["zo_perturb", "zo_update"]), share(["zo_perturb", "zo_update"]),
                     bshare(["backward"]), share(["backward"])))
    if not rows:
        have = ", ".join(f"{p} {me} @{b}" for p, me, b in sorted(models))
        sys.exit(f"a53_model compare: no step of {args.bench} matches a modelled configuration ({have})")
    print(f"Board (`zotrain bench`, cpu: {bench.get('cpu', '?')}, {threads} thread(s), path "
          f"{bench.get('best_path', '?')}) against the Cortex-A53 model at {args.ghz:g} GHz"
          + (f", {threads} threads at an assumed {args.efficiency:g} efficiency" if threads > 1 else "")
          + ". board / model > 1: the board is slower than predicted.")
    print()
    print("| precision | method | batch | board ms/step | model ms/step | board / model | forward % board / model "
          "| ZO perturb+update % board / model | backward % board / model |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (p, me, b), bms, mms, bf, mf, bz, mz, bb, mb in rows:
        print(f"| {p} | {me} | {b} | {bms:.2f} | {mms:.2f} | {bms / mms:.2f} | {100 * bf:.1f} / {100 * mf:.1f} "
              f"| {100 * bz:.1f} / {100 * mz:.1f} | {100 * bb:.1f} / {100 * mb:.1f} |")
    per = {(p, me, b): (bms / b, mms / b) for (p, me, b), bms, mms, *_ in rows}
    pairs = [(me, per[("fp32", me, 32)], per[("int8", me, 256)]) for (p, me, b) in per
             if p == "fp32" and b == 32 and ("int8", me, 256) in per]
    if pairs:
        print()
        print("| method | FP32 @ 32 / int8 @ 256 per sample, board | model |")
        print("|---|---:|---:|")
        for me, f, i in pairs:
            print(f"| {me} | {f[0] / i[0]:.2f} | {f[1] / i[1]:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("markers")
    m.add_argument("nm_output")
    a = sub.add_parser("analyze")
    a.add_argument("reduced")
    a.add_argument("json")
    a.add_argument("--precision", required=True)
    a.add_argument("--method", required=True)
    a.add_argument("--batch", type=int, required=True)
    a.add_argument("--coverage", type=float, default=0.995)
    a.add_argument("--iterations", type=int, default=100)
    a.add_argument("--cache", default="")
    a.add_argument("--top", type=int, default=15)
    r = sub.add_parser("report")
    r.add_argument("jsons", nargs="+")
    r.add_argument("--top", type=int, default=15)
    c = sub.add_parser("compare")
    c.add_argument("bench")
    c.add_argument("jsons", nargs="+")
    c.add_argument("--ghz", type=float, default=1.0)
    c.add_argument("--efficiency", type=float, default=0.75)
    s = sub.add_parser("sanity")
    s.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    {"markers": cmd_markers, "analyze": cmd_analyze, "report": cmd_report, "sanity": cmd_sanity,
     "compare": cmd_compare}[args.cmd](args)


if __name__ == "__main__":
    main()
