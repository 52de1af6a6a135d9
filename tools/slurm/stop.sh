#!/usr/bin/env bash
# Stop the single-node cluster started by tools/slurm/start.sh: only the daemons whose pid files
# that script wrote (never other Slurm or munge processes on the machine). Idempotent.
# HARDNEG_SLURM_DIR selects the cluster (default /tmp/hardneg-slurm); --purge also removes it.
set -uo pipefail
DIR=${HARDNEG_SLURM_DIR:-/tmp/hardneg-slurm}
MUNGE=${HARDNEG_MUNGE_DIR:-/tmp/hardneg-munge-$(printf %s "$DIR" | sha1sum | cut -c1-10)}

stop_pid() {  # stop_pid NAME PIDFILE EXPECTED_COMM
  local name=$1 file=$2 comm=$3 pid
  [[ -s "$file" ]] || return 0
  pid=$(cat "$file")
  # Only kill the process if it still is the daemon we started (pid not recycled).
  if kill -0 "$pid" 2>/dev/null && [[ "$(cat /proc/"$pid"/comm 2>/dev/null)" == "$comm" ]]; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    echo "stopped $name (pid $pid)"
  fi
  rm -f "$file"
}

stop_pid slurmd "$DIR/run/slurmd.pid" slurmd
stop_pid slurmctld "$DIR/run/slurmctld.pid" slurmctld
stop_pid munged "$DIR/run/munged.pid" munged
rm -f "$MUNGE/munged.pid"
SYSCONF=${HARDNEG_SLURM_SYSCONF:-/etc/slurm/slurm.conf}
if [[ -L "$SYSCONF" && "$(readlink "$SYSCONF")" == "$DIR/etc/slurm.conf" ]]; then rm -f "$SYSCONF"; fi
if [[ "${1:-}" == "--purge" ]]; then rm -rf "$DIR" "$MUNGE"; fi
exit 0
