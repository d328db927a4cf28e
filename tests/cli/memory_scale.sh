#!/usr/bin/env bash
# Peak RSS must not grow with the data set: the same short run on a set and on one 20 times
# larger (PointNet on synthetic point clouds; LeNet-5 on made-up IDX images) peaks within a few
# MiB, and summary.json's dataset_bytes stays small. Holding the larger sets in memory would add
# ~64 MiB (clouds) and ~44 MiB (images).
# Usage: memory_scale.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/memory-scale"
fresh_dir "${out}"
limit_mib=8

run() {  # run NAME ARGS...: a short run, then its peak RSS and dataset bytes on stdout
  local name="$1"; shift
  "${zotrain}" "$@" --set train.max_steps=3 --set train.epochs=1 --set train.threads=1 \
    --output-dir "${out}/${name}" --no-progress > /dev/null 2> "${out}/${name}.log" ||
    fail "${name}: $(tail -3 "${out}/${name}.log")"
  echo "$(json_field "${out}/${name}/summary.json" "s['memory']['peak_rss_bytes']")" \
       "$(json_field "${out}/${name}/summary.json" "s['memory']['dataset_bytes']")"
}

compare() {  # compare WHAT SMALL_RSS SMALL_DATA BIG_RSS BIG_DATA
  local grow=$(( ($4 - $2) / 1048576 ))
  echo "$1: peak RSS $(( $2 / 1048576 )) MiB -> $(( $4 / 1048576 )) MiB (+${grow}); dataset_bytes $3 -> $5"
  (( $4 - $2 <= limit_mib * 1048576 )) || fail "$1: peak RSS grew by ${grow} MiB with the data set"
  (( $5 - $3 < 1048576 )) || fail "$1: dataset_bytes grew from $3 to $5 with the data set"
}

# Point clouds: 14 classes x 10 and x 200 training clouds of 2,048 points (3.4 and 69 MB).
for n in 10 200; do
  "${zotrain}" --make-synthetic-modelnet "${out}/points-${n}" --synthetic-classes 14 \
    --synthetic-train "${n}" --synthetic-test 2 > /dev/null 2>&1 || fail "make-synthetic-modelnet"
done
pn=(--config "${repo}/configs/pointnet-synthetic.json" --set data.points=256 --set train.batch_size=8)
read -r s_rss s_data < <(run pn-small "${pn[@]}" --set data.root="${out}/points-10")
read -r b_rss b_data < <(run pn-big "${pn[@]}" --set data.root="${out}/points-200")
compare "PointNet" "${s_rss}" "${s_data}" "${b_rss}" "${b_data}"

# Images: 3,000 and 60,000 made-up 28x28 images (2.4 and 47 MB), plain IDX.
/usr/bin/python3 - "${out}" <<'PY'
import os, random, struct, sys
random.seed(1)
for n in (3000, 60000):
    d = os.path.join(sys.argv[1], f"images-{n}")
    os.makedirs(d)
    for stem, count in (("train", n), ("t10k", 100)):
        with open(os.path.join(d, f"{stem}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, count, 28, 28) + random.randbytes(count * 784))
        with open(os.path.join(d, f"{stem}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, count) + bytes(random.randrange(10) for _ in range(count)))
PY
ln=(--config "${repo}/configs/quickstart.json" --set train.batch_size=256)
read -r s_rss s_data < <(run img-small "${ln[@]}" --set data.root="${out}/images-3000")
read -r b_rss b_data < <(run img-big "${ln[@]}" --set data.root="${out}/images-60000")
compare "LeNet-5" "${s_rss}" "${s_data}" "${b_rss}" "${b_data}"
echo "memory-scale: peak RSS does not grow with the data set"
