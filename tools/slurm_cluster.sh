#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, with accounting (slurmdbd on MariaDB), for trying the
# workflow's SLURM profile on a workstation and for `make test-slurm` (docs/cluster.md, "A SLURM
# cluster on your workstation").
#
#   tools/slurm_cluster.sh start    install the Debian packages if missing, then start munged,
#                                   mariadbd, slurmdbd, slurmctld and slurmd, each waited on
#   tools/slurm_cluster.sh stop     cancel every job, wait for them to go, stop the daemons it started
#   tools/slurm_cluster.sh status   what runs
#
# Root only (daemons, /etc/slurm). Idempotent: `start` on a machine where it ran before stops the
# SLURM daemons, wipes their spool folders and its own accounting database (knowlab_slurm_acct, user
# knowlab_slurmdbd with a password drawn at each start and kept only in the root-only slurmdbd.conf;
# nothing of another SLURM's or MariaDB user's is touched) and starts afresh; munged and mariadbd are
# reused when running, and `stop` stops them only if `start` did.
# The configuration is written by `python -m knowlab.tooling.slurm conf` into /etc/slurm, which must
# not hold another cluster's slurm.conf (refused). Logs: /var/log/slurm-knowlab/.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
ETC=/etc/slurm
RUN=/run/slurm-knowlab
STATE=/var/spool/slurm-knowlab
LOGS=/var/log/slurm-knowlab
PACKAGES="slurm-wlm slurmdbd munge mariadb-server mariadb-client"

say() { echo "slurm_cluster: $*"; }
die() { echo "slurm_cluster: ERROR: $*" >&2; exit 1; }

# wait_for SECONDS DESCRIPTION COMMAND...: run COMMAND every 0.5 s until it succeeds
wait_for() {
    local limit=$1 what=$2; shift 2
    local until=$((SECONDS + limit))
    while ! "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $until ] || die "$what not ready after ${limit} s (logs: $LOGS/)"
        sleep 0.5
    done
    say "$what ready"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid PIDFILE NAME: TERM the process of PIDFILE and wait up to 20 s for it to exit
stop_pid() {
    local pidfile=$1 name=$2
    if alive "$pidfile"; then
        local pid; pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
        say "stopped $name (pid $pid)"
    fi
    rm -f "$pidfile"
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (it installs packages, starts daemons and writes /etc/slurm); try: sudo $0 $*"
}

install_packages() {
    local missing=()
    for cmd in slurmctld slurmd slurmdbd sacct munged mariadbd mariadb; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 ||
        die "missing ${missing[*]} and no apt-get: install SLURM (slurmctld, slurmd, slurmdbd), munge and MariaDB by hand"
    say "installing $PACKAGES (missing: ${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends $PACKAGES >/dev/null ||
        { apt-get update >/dev/null && apt-get install -y --no-install-recommends $PACKAGES >/dev/null; } ||
        die "apt-get install $PACKAGES failed"
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then say "munged already running"; return; fi
    [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null ||
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1k count=1 2>/dev/null; }
    chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged
    touch "$RUN/started-munged"
    wait_for 20 munged sh -c 'munge -n | unmunge'
}

start_mariadb() {
    if mariadb -e 'select 1' >/dev/null 2>&1; then say "mariadbd already running"; return; fi
    mkdir -p /run/mysqld; chown mysql:mysql /run/mysqld
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    nohup /usr/sbin/mariadbd --user=mysql --pid-file=/run/mysqld/mysqld.pid >"$LOGS/mariadbd.log" 2>&1 &
    touch "$RUN/started-mariadbd"
    wait_for 60 mariadbd mariadb -e 'select 1'
}

stop_slurm_daemons() {
    stop_pid "$RUN/slurmd.pid" slurmd
    stop_pid "$RUN/slurmctld.pid" slurmctld
    stop_pid "$RUN/slurmdbd.pid" slurmdbd
}

node_idle() { sinfo -h -N -o '%T' | grep -qx idle; }

start() {
    need_root start
    install_packages
    mkdir -p "$RUN" "$LOGS"
    # the configuration first: refuses to overwrite a real cluster's before anything is stopped
    PYTHONPATH="$ROOT/src" "$PY" -m knowlab.tooling.slurm conf --etc "$ETC" ||
        die "could not write the configuration into $ETC"
    stop_slurm_daemons
    start_munge
    start_mariadb
    # accounting from nothing: this cluster's own database (never SLURM's default slurm_acct_db) and
    # user, whose password the configuration just drew (slurmdbd.conf, root only); SQL on stdin, so
    # that the password is on no command line
    local db user pass
    db=$(sed -n 's/^StorageLoc=//p' "$ETC/slurmdbd.conf")
    user=$(sed -n 's/^StorageUser=//p' "$ETC/slurmdbd.conf")
    pass=$(sed -n 's/^StoragePass=//p' "$ETC/slurmdbd.conf")
    [ -n "$db" ] && [ -n "$user" ] && [ -n "$pass" ] || die "no StorageLoc, StorageUser or StoragePass in $ETC/slurmdbd.conf"
    mariadb <<SQL
DROP DATABASE IF EXISTS \`$db\`;
CREATE USER IF NOT EXISTS '$user'@'localhost';
ALTER USER '$user'@'localhost' IDENTIFIED BY '$pass';
GRANT ALL ON \`$db\`.* TO '$user'@'localhost';
FLUSH PRIVILEGES;
SQL
    rm -rf "$STATE"; mkdir -p "$STATE/ctld" "$STATE/d"
    slurmdbd
    wait_for 60 slurmdbd sacctmgr -n show cluster
    sacctmgr -i add cluster knowlab >/dev/null
    sacctmgr -i add account knowlab Cluster=knowlab Description=knowlab-local >/dev/null
    sacctmgr -i add user root Account=knowlab Cluster=knowlab >/dev/null
    slurmctld
    wait_for 30 slurmctld scontrol ping
    slurmd
    wait_for 60 "slurmd (node idle)" node_idle
    say "up: $(sinfo -h -N -o '%N %c CPUs %m MB %G %T'), partition local, account knowlab"
}

stop() {
    need_root stop
    if alive "$RUN/slurmctld.pid"; then
        local jobs; jobs=$(squeue -h -o %i 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            say "cancelling jobs: $(echo $jobs)"
            scancel $jobs 2>/dev/null || true
            for _ in $(seq 60); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] || say "WARNING: jobs left after 30 s: $(squeue -h -o %i | tr '\n' ' ')"
        fi
    fi
    stop_slurm_daemons
    if [ -f "$RUN/started-mariadbd" ]; then stop_pid /run/mysqld/mysqld.pid mariadbd; rm -f "$RUN/started-mariadbd"; fi
    if [ -f "$RUN/started-munged" ]; then stop_pid /run/munge/munged.pid munged; rm -f "$RUN/started-munged"; fi
    say "stopped"
}

status() {
    for name in slurmd slurmctld slurmdbd; do
        if alive "$RUN/$name.pid"; then say "$name running (pid $(cat "$RUN/$name.pid"))"; else say "$name not running"; fi
    done
    if alive "$RUN/slurmctld.pid"; then sinfo; squeue; fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
