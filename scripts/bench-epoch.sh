#!/usr/bin/env bash
# Benchmark (not a test): zotrain against the PyTorch reference (bench/pytorch_reference.py) on
# full MNIST, LeNet-5, batch 32, for Full BP, Full ZO, ElasticZO ZO-Feat-Cls1 and -Cls2.
#
# Speed mode (default): per method, one epoch of zotrain (build/host/zotrain) and a fixed number
# of PyTorch steps (--pt-steps, default 500, warm-up steps left out), interleaved method by method
# in the same run; then a table of s/epoch, ms/step, the zotrain/PyTorch ratio against the target
# (<= 1/3 for ZO methods, <= 1/2 for Full BP), zotrain's ZO perturb+update share (target <= 5 %)
# and phase breakdown, plus the compute floor (MACs per step against this CPU's FP32 peak).
#
# Accuracy mode (--accuracy EPOCHS): every method for EPOCHS epochs in both tools with the same
# hyperparameters, test accuracy side by side (slow: a ZO epoch is ~2k steps).
#
# Usage: scripts/bench-epoch.sh [options]
#   --threads T       worker threads of both tools (default $THREADS or 2)
#   --pt-steps K      PyTorch steps per method in speed mode (default 500; 0 = a full epoch)
#   --zt-steps K      zotrain steps per method in speed mode (default 0 = a full epoch)
#   --repeat R        run every measurement R times and keep the fastest (default 1)
#   --methods LIST    comma-separated subset of full_bp,full_zo,cls1,cls2 (default all)
#   --accuracy E      accuracy mode with E epochs
#   --build           always run the (incremental) build first; default: only if the binary is missing
#   --no-pytorch      zotrain only
#   --keep            keep the temporary output directories
# Hyperparameters (environment, same for both tools): BP_LR (0.05: Full BP and the BP part of
# ElasticZO), ZO_LR_FULL (1e-3: Full ZO), ZO_LR_ELASTIC (3e-4: ZO part of ElasticZO),
# ZO_EPS (1e-3), GRAD_CLIP (2, zotrain's default).
# Needs: cmake + the project's build deps, npm (for scripts/get-data.sh), python3, and for the
# reference Debian's PyTorch (apt-get install -y python3-torch; run with /usr/bin/python3).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo}"

threads="${THREADS:-2}"
pt_steps=500
zt_steps=0
repeat=1
methods="full_bp,full_zo,cls1,cls2"
accuracy=0
force_build=0
run_pytorch=1
keep=0
BP_LR="${BP_LR:-0.05}"
ZO_LR_FULL="${ZO_LR_FULL:-1e-3}"
ZO_LR_ELASTIC="${ZO_LR_ELASTIC:-3e-4}"
ZO_EPS="${ZO_EPS:-1e-3}"
GRAD_CLIP="${GRAD_CLIP:-2}"
PY="${PYTHON:-/usr/bin/python3}"

die() { echo "bench-epoch: error: $*" >&2; exit 1; }
say() { echo "bench-epoch: $*" >&2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --pt-steps) pt_steps="$2"; shift 2 ;;
    --zt-steps) zt_steps="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --methods) methods="$2"; shift 2 ;;
    --accuracy) accuracy="$2"; shift 2 ;;
    --build) force_build=1; shift ;;
    --no-pytorch) run_pytorch=0; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ "${threads}" =~ ^[1-9][0-9]*$ ]] || die "--threads needs a positive integer"
[[ "${pt_steps}" =~ ^[0-9]+$ ]] || die "--pt-steps needs an integer >= 0"
[[ "${zt_steps}" =~ ^[0-9]+$ ]] || die "--zt-steps needs an integer >= 0"
[[ "${repeat}" =~ ^[1-9][0-9]*$ ]] || die "--repeat needs a positive integer"
[[ "${accuracy}" =~ ^[0-9]+$ ]] || die "--accuracy needs an integer"

bin="${repo}/build/host/zotrain"
if [[ ${force_build} -eq 1 || ! -x "${bin}" ]]; then
  say "building zotrain (cmake --preset host && cmake --build --preset host -j) ..."
  cmake --preset host >&2
  cmake --build --preset host -j >&2
fi
[[ -x "${bin}" ]] || die "${bin} missing after the build"

bash "${repo}/scripts/get-data.sh" mnist >&2
data="${repo}/data/mnist"

if [[ ${run_pytorch} -eq 1 ]]; then
  "${PY}" -c 'import torch, numpy' 2>/dev/null ||
    die "${PY} cannot import torch/numpy: apt-get install -y python3-torch (or --no-pytorch)"
fi

work="$(mktemp -d /tmp/bench-epoch.XXXXXX)"
if [[ ${keep} -eq 0 ]]; then trap 'rm -rf "${work}"' EXIT; else say "outputs kept in ${work}"; fi
results="${work}/results.jsonl"
: > "${results}"

# method key -> "zotrain method.name|method.partition|pytorch --method|pytorch --partition|ZO lr"
spec() {
  case "$1" in
    full_bp) echo "full_bp|0|full_bp|0|${ZO_LR_ELASTIC}" ;;
    full_zo) echo "full_zo|5|full_zo|5|${ZO_LR_FULL}" ;;
    cls1) echo "elastic_zo|zo-feat-cls1|elastic_zo|zo-feat-cls1|${ZO_LR_ELASTIC}" ;;
    cls2) echo "elastic_zo|zo-feat-cls2|elastic_zo|zo-feat-cls2|${ZO_LR_ELASTIC}" ;;
    *) die "unknown method ${1} (full_bp, full_zo, cls1, cls2)" ;;
  esac
}

epochs=1
[[ ${accuracy} -gt 0 ]] && epochs="${accuracy}"

run_zotrain() {  # key rep
  local key="$1" rep="$2" name part lr out
  IFS='|' read -r name part _ _ lr <<< "$(spec "${key}")"
  out="${work}/zt-${key}-${rep}"
  local args=(--config configs/quickstart.json --set "data.root=${data}" --set data.dataset=mnist
              --set "method.name=${name}" --set "method.partition=${part}"
              --set "train.epochs=${epochs}" --set train.batch_size=32
              --set "train.threads=${threads}" --set "train.eval_every=${epochs}"
              --set "optimizer.name=sgd" --set "optimizer.lr=${lr}" --set "optimizer.bp_lr=${BP_LR}"
              --set "zo.eps=${ZO_EPS}" --set "zo.grad_clip=${GRAD_CLIP}"
              --output-dir "${out}" --overwrite --no-progress -q)
  if [[ ${accuracy} -eq 0 && ${zt_steps} -gt 0 ]]; then args+=(--set "train.max_steps=${zt_steps}"); fi
  if ! "${bin}" "${args[@]}" > "${out}.log" 2>&1; then
    cat "${out}.log" >&2
    die "zotrain failed (${key})"
  fi
  "${PY}" - "${out}/summary.json" "${key}" "${rep}" >> "${results}" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"tool": "zotrain", "key": sys.argv[2], "rep": int(sys.argv[3]), "summary": s}))
EOF
}

run_pytorch() {  # key rep
  local key="$1" rep="$2" pmethod ppart lr
  IFS='|' read -r _ _ pmethod ppart lr <<< "$(spec "${key}")"
  local args=(--data "${data}" --method "${pmethod}" --partition "${ppart}" --epochs "${epochs}"
              --batch-size 32 --lr "${lr}" --bp-lr "${BP_LR}" --eps "${ZO_EPS}"
              --grad-clip "${GRAD_CLIP}" --threads "${threads}" --json)
  if [[ ${accuracy} -eq 0 ]]; then
    args+=(--no-eval)
    if [[ ${pt_steps} -gt 0 ]]; then args+=(--max-steps "${pt_steps}"); fi
  fi
  local line
  line="$("${PY}" "${repo}/bench/pytorch_reference.py" "${args[@]}" 2> "${work}/pt-${key}-${rep}.log" | tail -n 1)" ||
    { cat "${work}/pt-${key}-${rep}.log" >&2; die "pytorch_reference failed (${key})"; }
  "${PY}" - "${key}" "${rep}" "${line}" >> "${results}" <<'EOF'
import json, sys
print(json.dumps({"tool": "pytorch", "key": sys.argv[1], "rep": int(sys.argv[2]), "result": json.loads(sys.argv[3])}))
EOF
}

IFS=',' read -r -a keys <<< "${methods}"
for key in "${keys[@]}"; do spec "${key}" > /dev/null; done
for ((rep = 1; rep <= repeat; rep++)); do
  for key in "${keys[@]}"; do
    if [[ ${accuracy} -eq 0 && ${zt_steps} -gt 0 ]]; then what="${zt_steps} steps"; else what="${epochs} epoch(s)"; fi
    say "[${rep}/${repeat}] ${key}: zotrain, ${what}, ${threads} thread(s) ..."
    run_zotrain "${key}" "${rep}"
    if [[ ${run_pytorch} -eq 1 ]]; then
      if [[ ${accuracy} -gt 0 ]]; then
        say "[${rep}/${repeat}] ${key}: PyTorch, ${epochs} epoch(s) ..."
      else
        say "[${rep}/${repeat}] ${key}: PyTorch, $([[ ${pt_steps} -gt 0 ]] && echo "${pt_steps} steps" || echo "1 epoch") ..."
      fi
      run_pytorch "${key}" "${rep}"
    fi
  done
done

"${PY}" - "${results}" "${threads}" "${accuracy}" "${methods}" <<'EOF'
import json, re, subprocess, sys

results_path, threads, accuracy, methods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
keys = methods.split(",")
label = {"full_bp": "Full BP", "full_zo": "Full ZO", "cls1": "ElasticZO Cls1", "cls2": "ElasticZO Cls2"}
partition = {"full_bp": 0, "full_zo": 5, "cls1": 3, "cls2": 4}
target = {"full_bp": 0.5, "full_zo": 1 / 3, "cls1": 1 / 3, "cls2": 1 / 3}
TRAIN_PHASES = ("forward", "loss", "zo_perturb", "zo_update", "backward")
STEPS_PER_EPOCH = 60000 // 32

zt, pt = {}, {}
for line in open(results_path):
    r = json.loads(line)
    if r["tool"] == "zotrain":
        s = r["summary"]
        ph = {k: v["seconds"] for k, v in s["phases"].items()}
        steps = s["steps"]
        step_s = sum(ph.get(k, 0.0) for k in TRAIN_PHASES) / steps
        rec = {"steps": steps, "step_ms": 1e3 * step_s,
               # Training time (incl. batch assembly, excl. eval) per 1,875-step epoch.
               "epoch_s": (s["train_seconds"] - ph.get("eval", 0.0)) * STEPS_PER_EPOCH / steps,
               "phase_ms": {k: 1e3 * ph.get(k, 0.0) / steps for k in TRAIN_PHASES + ("data",)},
               "acc": s.get("test_accuracy")}
        # Keep the fastest repetition.
        if r["key"] not in zt or rec["step_ms"] < zt[r["key"]]["step_ms"]:
            zt[r["key"]] = rec
    else:
        p = r["result"]
        rec = {"steps": p["steps"], "step_ms": p["step_ms"], "epoch_s": p["epoch_seconds"],
               "extrapolated": p["epoch_extrapolated"], "fc_impl": p["fc_impl"],
               "acc": None if p["test_accuracy"] is None else 100.0 * p["test_accuracy"],
               "phase_ms": p["phase_ms_per_step"]}
        if r["key"] not in pt or rec["step_ms"] < pt[r["key"]]["step_ms"]:
            pt[r["key"]] = rec

def f(v, fmt):
    return "-" if v is None else format(v, fmt)

if accuracy > 0:
    print(f"\nTest accuracy after {accuracy} epoch(s), full MNIST, batch 32, {threads} thread(s)")
    print(f"{'method':<16}{'zotrain %':>11}{'PyTorch %':>11}{'zotrain s/ep':>14}{'PyTorch s/ep':>14}")
    for k in keys:
        z, p = zt.get(k, {}), pt.get(k, {})
        print(f"{label[k]:<16}{f(z.get('acc'), '11.2f')}{f(p.get('acc'), '11.2f')}"
              f"{f(z.get('epoch_s'), '14.2f')}{f(p.get('epoch_s'), '14.2f')}")
    sys.exit(0)

# ---- speed table
print(f"\nzotrain vs PyTorch, LeNet-5, full MNIST (1,875 steps/epoch), batch 32, {threads} thread(s)")
hdr = (f"{'method':<16}{'zt s/ep':>9}{'zt ms/st':>10}{'PT ms/st':>10}{'PT s/ep':>9}"
       f"{'ratio':>8}{'target':>8}{'':>6}{'ZO p+u':>8}")
print(hdr)
for k in keys:
    z, p = zt.get(k), pt.get(k)
    ratio = z["epoch_s"] / p["epoch_s"] if z and p else None
    ok = "-" if ratio is None else ("ok" if ratio <= target[k] + 1e-9 else "MISS")
    zo_share = None
    if z and partition[k] > 0:
        zo_share = 100.0 * (z["phase_ms"]["zo_perturb"] + z["phase_ms"]["zo_update"]) / z["step_ms"]
    print(f"{label[k]:<16}{f(z and z['epoch_s'], '9.2f')}{f(z and z['step_ms'], '10.3f')}"
          f"{f(p and p['step_ms'], '10.3f')}{f(p and p['epoch_s'], '9.2f')}{f(ratio, '8.3f')}"
          f"{'<=' + ('1/2' if k == 'full_bp' else '1/3'):>8}{ok:>6}"
          f"{'-' if zo_share is None else format(zo_share, '7.1f') + '%':>8}")
print("s/ep = training time of one 1,875-step epoch incl. batch assembly, excl. eval (extrapolated "
      "from the steps run when fewer: PyTorch leaves its warm-up steps out); ms/st = step time excl. "
      "batch assembly; ratio = zotrain s/ep / PyTorch s/ep; ZO p+u = zotrain (zo_perturb + "
      "zo_update) / step time, target <= 5 %")
if pt:
    print("PyTorch FC layers: " + ", ".join(sorted({v['fc_impl'] for v in pt.values()}))
          + " (conv1x1 = nn.Linear replaced by 1x1 Conv2d through oneDNN)")

print("\nPhase breakdown, ms per step (zotrain | PyTorch)")
cols = ("forward", "loss", "zo_perturb", "zo_update", "backward", "data")
print(f"{'method':<16}" + "".join(f"{c:>19}" for c in cols))
for k in keys:
    z, p = zt.get(k), pt.get(k)
    cells = []
    for c in cols:
        a = f(z and z["phase_ms"].get(c), "7.3f")
        b = f(p and p["phase_ms"].get(c), "7.3f")
        cells.append(f"{a:>8} |{b:>8}")
    print(f"{label[k]:<16}" + "".join(f"{c:>19}" for c in cells))

# ---- compute floor
# LeNet-5 layer shapes: (name, MACs per sample); conv: out_c * out_h * out_w * in_c * k * k.
layers = [("conv1", 6 * 28 * 28 * 1 * 5 * 5), ("conv2", 16 * 14 * 14 * 6 * 5 * 5),
          ("fc1", 784 * 120), ("fc2", 120 * 84), ("fc3", 84 * 10)]
fwd = sum(m for _, m in layers)
B = 32

def step_macs(c):
    """MACs per batch-32 step for partition C: ZO (C > 0) runs two full forwards, BP (C = 0)
    one; the backward of layers C+1..L costs a weight-gradient GEMM (= the layer's forward
    MACs) plus an input-gradient GEMM, except for the first BP layer (its input is the data or
    a detached activation)."""
    bwd = sum(m * (1 if i == c else 2) for i, (_, m) in enumerate(layers) if i >= c)
    return B * ((2 if c > 0 else 1) * fwd + bwd)

def cpu_ghz():
    try:
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":")[1]) / 1e3
    except OSError:
        pass
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"CPU max MHz:\s*([\d.]+)", out) or re.search(r"CPU MHz:\s*([\d.]+)", out)
        if m:
            return float(m.group(1)) / 1e3
    except OSError:
        pass
    return None

def has_avx512():
    try:
        return " avx512f" in open("/proc/cpuinfo").read()
    except OSError:
        return False

ghz = cpu_ghz()
lanes = 16 if has_avx512() else 8
cores = min(threads, __import__("os").cpu_count() or threads)
peak = None if ghz is None else cores * 2 * lanes * 2 * ghz  # GFLOP/s: cores x 2 FMA x lanes x 2
print(f"\nCompute floor: LeNet-5 forward = {fwd:,} MACs/sample ("
      + ", ".join(f"{n} {m:,}" for n, m in layers) + ")")
if peak:
    print(f"FP32 peak ({cores} core(s) x 2 FMA units x {lanes} lanes x 2 FLOP x {ghz:.3f} GHz from "
          f"/proc/cpuinfo) = {peak:.1f} GFLOP/s")
print(f"{'method':<16}{'MMAC/step':>10}{'floor ms':>10}{'zt GFLOP/s':>12}{'% peak':>8}{'PT GFLOP/s':>12}{'% peak':>8}")
for k in keys:
    macs = step_macs(partition[k])
    gflop = 2 * macs / 1e9
    floor_ms = None if not peak else 1e3 * gflop / peak
    z, p = zt.get(k), pt.get(k)
    zg = z and gflop / (z["step_ms"] / 1e3)
    pg = p and gflop / (p["step_ms"] / 1e3)
    print(f"{label[k]:<16}{macs / 1e6:10.2f}{f(floor_ms, '10.3f')}{f(zg, '12.1f')}"
          f"{f(zg and peak and 100 * zg / peak, '8.1f')}{f(pg, '12.1f')}{f(pg and peak and 100 * pg / peak, '8.1f')}")
EOF
