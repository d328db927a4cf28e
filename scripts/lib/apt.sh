# shellcheck shell=bash
# Shared by scripts/install-deps.sh and scripts/make-sysroot.sh (sourced, not run).
#
# apt_retry LABEL COMMAND...: runs an apt-get command that may meet a busy dpkg lock or a
# transient mirror error. apt-get itself waits for the dpkg lock (DPkg::Lock::Timeout, the
# caller passes it) and retries each download (Acquire::Retries); on top of that the whole
# command is retried ZT_APT_ATTEMPTS times (default 4) with a growing pause, because a
# mirror in mid-sync or a lock held by another apt-get (the lists lock has no timeout) clears
# within minutes. After the last attempt it says what failed and returns apt-get's status.

: "${ZT_APT_ATTEMPTS:=4}"
ZT_APT_LOCK_TIMEOUT=600   # seconds apt-get waits for the dpkg lock before it gives up
ZT_APT_OPTS=(-o "DPkg::Lock::Timeout=${ZT_APT_LOCK_TIMEOUT}" -o Acquire::Retries=3)

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

apt_retry() {
  local label="$1" attempt=1 rc=0 pause=15
  shift
  while true; do
    "$@" && return 0
    rc=$?
    if [[ "${attempt}" -ge "${ZT_APT_ATTEMPTS}" ]]; then
      echo "${label}: '$*' failed ${attempt} times (exit ${rc}); see apt's messages above" >&2
      return "${rc}"
    fi
    echo "${label}: '$*' failed (exit ${rc}, attempt ${attempt} of ${ZT_APT_ATTEMPTS});" \
         "retrying in ${pause} s" >&2
    sleep "${pause}"
    attempt=$((attempt + 1))
    pause=$((pause * 2))
  done
}
