#!/usr/bin/env bash
# The scripts of scripts/reproduce/ in their smoke mode (--epochs 1, two steps per run, the
# bundled MNIST subset): each finishes, writes its Markdown table (paper value, ours, difference)
# and its PNG figures, and reuses runs another script made. fig4-6's accounting must match the
# paper's published bytes exactly.
# Usage: reproduce_smoke.sh ZOTRAIN REPO OUTDIR   (exit 77 = skipped: no GNU parallel or matplotlib)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/reproduce"
command -v parallel >/dev/null || { echo "no GNU parallel: skipped"; exit 77; }
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "no python3-matplotlib: skipped"; exit 77; }
rm -rf "${out}"
mkdir -p "${out}/tmp"
export TMPDIR="${out}/tmp"  # the sweep jobs' core-share locks: this test's own (tests/cli/sweep.sh)
common=(--zotrain "${zotrain}" --out "${out}" --datasets mnist
        --mnist-root "${repo}/data/mnist-subset" --jobs 2)
r="${repo}/scripts/reproduce"

"${r}/table1" "${common[@]}" --epochs 1 --set train.max_steps=2 --points 64 > "${out}.t1" 2>&1 ||
  fail "table1: $(tail -5 "${out}.t1")"
t1="${out}/report/table1.md"
grep -q '^| Full ZO | [0-9.]* (89.80, [-+][0-9.]*) |' "${t1}" || fail "table1.md: $(cat "${t1}")"
grep -q '^| Full BP | .* | – |' "${t1}" || fail "table1.md: INT8* Full BP should be –"
grep -q 'Synthetic points' "${t1}" || fail "table1.md has no PointNet column"
grep -q 'Synthetic points INT8' "${t1}" || fail "table1.md has no int8 PointNet column"
grep -q '^PointNet: Cls1 [-+][0-9.]* against Full BP .*int8 Full BP [-+][0-9.]* against FP32' "${t1}" ||
  fail "table1.md: no PointNet verdict line"
[[ "$(wc -l < "${out}/report/table1.csv")" -eq 18 ]] || fail "table1.csv: 17 runs expected"

# fig2-3 and fig7 use Table 1's runs: nothing new to run.
for s in fig2-3 fig7; do
  "${r}/${s}" "${common[@]}" --epochs 1 --set train.max_steps=2 > "${out}.${s}" 2>&1 ||
    fail "${s}: $(tail -5 "${out}.${s}")"
  grep -q "0 to run" "${out}.${s}" || fail "${s} reran Table 1's runs: $(grep sweep: "${out}.${s}")"
done
grep -q '^| FP32 | MNIST | ZO-Feat-Cls1 | 1 |' "${out}/report/fig2-3.md" || fail "fig2-3.md"
grep -q '^| INT8 | ZO-Feat-Cls2 |' "${out}/report/fig7.md" || fail "fig7.md"
grep -q 'int8 speed-up over FP32' "${out}/report/fig7.md" || fail "fig7.md: no speed-up line"

# A second seed: seed 1's runs are reused, only the 11 seed-2 LeNet-5 runs are new; each cell
# gives the mean ± sd, the mean's and the worst seed's difference and both seeds, and the verdict
# line counts the cells.
"${r}/table1" "${common[@]}" --epochs 1 --set train.max_steps=2 --no-pointnet --seeds 1,2 \
  > "${out}.t1s" 2>&1 || fail "table1 --seeds: $(tail -5 "${out}.t1s")"
grep -q "11 to run" "${out}.t1s" || fail "table1 --seeds 1,2: $(grep sweep: "${out}.t1s")"
grep -q '^| Full ZO | [0-9.]* ± [0-9.]* (89.80, [-+][0-9.]*; worst [-+][0-9.]*) \[[0-9.]* / [0-9.]*\] |' "${t1}" ||
  fail "table1.md with two seeds: $(cat "${t1}")"
grep -q "^[0-9]* of 11 LeNet-5 cells reach .* in [0-3] of 3 columns with every method run" "${t1}" ||
  fail "table1.md: no verdict line"
# One cell narrowed out of those runs (nothing to run): its table1.csv still names the cell's
# settings, though none varies among its runs, so that table1-merge's rows say what ran.
"${r}/table1" "${common[@]}" --epochs 1 --set train.max_steps=2 --no-pointnet --variants int8 \
  --methods cls2 > "${out}.t1n" 2>&1 || fail "table1 narrowed: $(tail -5 "${out}.t1n")"
grep -q "0 to run" "${out}.t1n" || fail "table1 narrowed reran: $(grep sweep: "${out}.t1n")"
for k in int8.r_max int8.sign int8.p_zero.0 method.partition train.batch_size; do
  head -1 "${out}/report/table1.csv" | tr , '\n' | grep -qx "${k}" ||
    fail "table1.csv of one cell has no ${k} column: $(head -1 "${out}/report/table1.csv")"
done
/usr/bin/python3 - "${out}/report/table1.csv" <<'EOF' || fail "table1.csv: the method label is lost"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sys.exit(0 if rows and all(r["method"] == "cls2" and r["int8.r_max"] for r in rows) else 1)
EOF

"${r}/table2" "${common[@]}" --epochs 1 > "${out}.t2" 2>&1 || fail "table2: $(tail -5 "${out}.t2")"
t2="${out}/report/table2.md"
grep -q '^| w/o fine-tuning | [0-9.]* (74.41, ' "${t2}" || fail "table2.md: $(cat "${t2}")"
grep -q '^| ZO-Feat-Cls1 | ' "${t2}" || fail "table2.md has no ZO-Feat-Cls1 row"
grep -q '^[0-9]* of 16 fine-tuned cells reach' "${t2}" || fail "table2.md: no verdict line"
# Two seeds (seed 1's runs reused, seed 2 fine-tunes on another draw): mean ± sd per cell.
"${r}/table2" "${common[@]}" --epochs 1 --seeds 1,2 > "${out}.t2s" 2>&1 ||
  fail "table2 --seeds 1,2: $(tail -5 "${out}.t2s")"
grep -q '^| w/o fine-tuning | [0-9.]* ± [0-9.]* (74.41, [-+][0-9.]*; worst [-+][0-9.]*) \[[0-9.]* / [0-9.]*\]' \
  "${t2}" || fail "table2.md with two seeds: $(cat "${t2}")"
[[ "$(ls -d "${out}"/runs/finetune-mnist-*-s2-*from-* | wc -l)" -eq 16 ]] ||
  fail "table2 --seeds 1,2: 16 seed-2 fine-tuning runs expected: $(ls "${out}/runs")"
[[ "$(grep -c ',2,' "${out}/report/table2.csv")" -ge 20 ]] ||
  fail "table2.csv: a row per seed expected: $(cat "${out}/report/table2.csv")"

"${r}/fig4-6" "${common[@]}" --steps 2 > "${out}.f4" 2>&1 || fail "fig4-6: $(tail -5 "${out}.f4")"
f4="${out}/report/fig4-6.md"
[[ "$(grep -c '^| lenet5 \|^| pointnet ' "${f4}")" -eq 20 ]] || fail "fig4-6.md: 20 rows expected"
if grep '^| lenet5 \|^| pointnet ' "${f4}" | awk -F' \\| ' '$6 != "+0" && $6 != "–"' | grep -q .; then
  fail "the paper's accounting differs from the published bytes: $(cat "${f4}")"
fi

for png in fig2 fig3 fig4 fig5 fig6 fig7; do
  f="${out}/report/${png}.png"
  [[ -s "${f}" && "$(head -c 8 "${f}" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] ||
    fail "${png}.png missing or not a PNG"
done
# Figs. 2-3 with one epoch: each method's point is drawn (markers), not a one-point line that
# shows nothing; the axes take the left of the image, the legend sits beside them.
/usr/bin/python3 - "${out}/report" <<'EOF' || fail "fig2/fig3.png: a method's curve is not visible"
import sys
import matplotlib.image
from matplotlib.colors import to_rgb
for name in ("fig2", "fig3"):
    img = matplotlib.image.imread(f"{sys.argv[1]}/{name}.png")[:, :, :3]
    axes = img[:, : int(img.shape[1] * 0.7)]
    for colour in ("tab:red", "tab:orange", "tab:green", "tab:blue"):
        close = abs(axes - to_rgb(colour)).max(axis=2) < 0.08
        if close.sum() < 40:
            sys.exit(f"{name}.png: {colour}: {close.sum()} pixels in the axes")
EOF
echo "reproduce: every script's smoke pass wrote its table and figures"
