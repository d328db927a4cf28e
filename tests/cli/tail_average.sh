#!/usr/bin/env bash
# scripts/reproduce/tail-average on the bundled MNIST subset (int8 Full ZO, 3 epochs): it trains,
# keeps each epoch's checkpoint through exact resume, and the mean of the last 1 checkpoint is
# that checkpoint byte for byte (so its validation accuracy is the last epoch's); the mean of 3
# is a checkpoint `zotrain eval` accepts, its int8 weights the rounded element-wise mean.
# Usage: tail_average.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/tail-average"
fresh_dir "${out}"
cfg="${out}/int8-full-zo.json"
sed -e "s|\"root\": \"[^\"]*\"|\"root\": \"${repo}/data/mnist-subset\"|" \
    -e 's|"epochs": 100|"epochs": 3|' "${repo}/configs/paper/lenet5-mnist-int8-full-zo.json" > "${cfg}"
"${repo}/scripts/reproduce/tail-average" "${cfg}" --seeds 1 --start 1 --last 1,3 \
  --validation 256 --out "${out}/runs" --zotrain "${zotrain}" > "${out}/table.md" 2> "${out}/log" ||
  fail "tail-average: $(tail -5 "${out}/log")"
cat "${out}/table.md"
keep="${out}/runs/int8-full-zo-s1.epochs"
for e in 1 2 3; do [[ -f "${keep}/e${e}.safetensors" ]] || fail "no checkpoint of epoch ${e}"; done
cmp -s "${keep}/avg-last1.safetensors" "${keep}/e3.safetensors" ||
  fail "the mean of one checkpoint differs from it"
row="$(grep '^| 1 |' "${out}/table.md")" || fail "no row for seed 1"
IFS='|' read -r _ seed last mean1 mean3 _ <<< "${row}"
[[ "${last// /}" == "${mean1// /}" ]] || fail "epoch 3 ${last} but the mean of the last 1 ${mean1}"
[[ "${mean3// /}" =~ ^[0-9]+\.[0-9][0-9]$ ]] || fail "mean of the last 3: '${mean3}'"
# Element by element: the mean of 3 is round-half-away-from-zero of the three epochs' mean.
/usr/bin/python3 - "${keep}" <<'PY' || fail "the mean of 3 is not the rounded element-wise mean"
import json, struct, sys
def tensors(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: struct.unpack(f"{v['data_offsets'][1] - v['data_offsets'][0]}b",
                             b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__" and v["dtype"] == "I8"}
d = sys.argv[1]
ts = [tensors(f"{d}/e{e}.safetensors") for e in (1, 2, 3)]
avg = tensors(f"{d}/avg-last3.safetensors")
assert avg and set(avg) == set(ts[0])
moved = 0
for k in avg:
    for i, got in enumerate(avg[k]):
        s = ts[0][k][i] + ts[1][k][i] + ts[2][k][i]
        want = int((abs(s) / 3) + 0.5) * (1 if s >= 0 else -1)
        assert got == want, (k, i, got, want)
        moved += ts[0][k][i] != ts[2][k][i]
assert moved > 0, "training moved no weight between epochs 1 and 3"
PY
echo "tail-average: ok"
