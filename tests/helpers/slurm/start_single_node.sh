#!/usr/bin/env bash
# Starts a one-node SLURM cluster on this machine (Debian's slurm-wlm and munge, run as root),
# shaped like a small GPU cluster: one fake GPU, and no accounting database, so `sacct` has
# nothing to ask (as on many small clusters). Idempotent: does nothing when the cluster answers.
# Usage: tests/helpers/slurm/start_single_node.sh   (CI: .ci/run installs the packages first)
set -euo pipefail

if sinfo --noheader >/dev/null 2>&1; then
    exit 0
fi
for command in munged slurmctld slurmd; do
    command -v "$command" >/dev/null || { echo "missing $command: apt-get install slurm-wlm munge" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "starting slurm daemons needs root" >&2; exit 1; }

node=$(hostname -s)
cpus=$(nproc)
# Leave a little memory to the node itself.
memory_mb=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) * 9 / 10 ))

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=polyrag-test
SlurmctldHost=${node}
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
# No accounting database: sacct cannot report on jobs here.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerParameters=sched_interval=1
MinJobAge=300
NodeName=${node} CPUs=${cpus} RealMemory=${memory_mb} Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# A fake GPU: SLURM only needs a device file to count.
cat > /etc/slurm/gres.conf <<CONF
NodeName=${node} Name=gpu File=/dev/null
CONF

chown munge:munge /run/munge
runuser -u munge -- /usr/sbin/munged
slurmctld
slurmd -N "${node}"
for _ in $(seq 60); do
    if sinfo --noheader --states=idle 2>/dev/null | grep -q .; then
        exit 0
    fi
    sleep 1
done
echo "slurm did not come up; see /var/log/slurm/" >&2
tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
