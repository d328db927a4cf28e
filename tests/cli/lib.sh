# Sourced by the tests/cli/*.sh scripts (after `set -euo pipefail`): what they all need.

# fail MESSAGE...: the test fails with MESSAGE.
fail() { echo "FAIL: $*" >&2; exit 1; }

# fresh_dir DIR: DIR, emptied of an earlier run's files.
fresh_dir() {
  rm -rf "$1"
  mkdir -p "$1"
}

# json_field FILE EXPR: EXPR evaluated by python3 with s the JSON document in FILE.
json_field() { /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# finished DIR REFERENCE_DIGEST WHAT: a finished run has the uninterrupted run's weights, every
# step and epoch logged once, and no temporary file left behind.
finished() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY' || fail "$3"
import json, os, sys
d, ref, what = sys.argv[1:]
s = json.load(open(os.path.join(d, "summary.json")))
if s["weights_digest"] != ref: sys.exit(f"{what}: weights_digest {s['weights_digest']}, uninterrupted {ref}")
steps = [json.loads(l)["step"] for l in open(os.path.join(d, "steps.jsonl"))]
if steps != list(range(1, s["steps"] + 1)): sys.exit(f"{what}: steps.jsonl holds steps {steps}")
epochs = [json.loads(l)["epoch"] for l in open(os.path.join(d, "metrics.jsonl"))]
if epochs != list(range(1, len(epochs) + 1)) or len(epochs) != s["epochs"]:
    sys.exit(f"{what}: metrics.jsonl holds epochs {epochs}")
left = [f for f in os.listdir(d) if f.endswith((".tmp", ".next"))]
if left: sys.exit(f"{what}: left behind: {left}")
PY
}
