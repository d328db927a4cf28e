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
