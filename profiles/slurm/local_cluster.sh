#!/bin/sh
# A single-node Slurm cluster on this Debian machine, to run the workflow through Snakemake's
# Slurm executor for real (profiles/slurm). Run as root; it replaces /etc/slurm/slurm.conf.
#   apt-get install -y slurm-wlm munge && sh profiles/slurm/local_cluster.sh
# Like many a site's GPU nodes it has no accounting database, and one partition, "gpu", the
# one the guide's Slurm command names (tests/test_slurm.py runs that command as it is). The
# node offers its GPUs (/dev/nvidia0, ...) as generic resources ("gpu"); on a machine without
# GPUs, GPUS stand-ins (default 2: empty files that Slurm hands out as it would devices),
# enough to schedule the GPU jobs of a replay. It claims at least 16 CPUs and 64 GB
# (config_overrides), so that the profile's jobs (4 CPUs and 16 GB each) fit four at a time
# as on a GPU node even on a small machine: nothing holds a job to what it asked for here
# (task/none), and a replay's jobs use little. Jobs stay listed by squeue for 10 minutes
# after they end (MinJobAge), which the executor's squeue status queries rely on.
set -eu
mkdir -p /var/spool/slurmd
NODE=$(hostname -s)
if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  GPUS=$(ls /dev/nvidia[0-9]* | wc -l)
  DEVICES="/dev/nvidia[0-$((GPUS - 1))]"
else
  GPUS=${GPUS:-2}
  mkdir -p /var/spool/slurmd/stand-in
  for i in $(seq 0 $((GPUS - 1))); do : > /var/spool/slurmd/stand-in/gpu$i; done
  DEVICES="/var/spool/slurmd/stand-in/gpu[0-$((GPUS - 1))]"
fi
CPUS=$(nproc)
[ "$CPUS" -ge 16 ] || CPUS=16
MEMORY_MB=$(awk '/MemTotal/ {m = int($2 / 1024 * 0.9); print (m < 65536 ? 65536 : m)}' /proc/meminfo)
mkdir -p /etc/slurm /var/spool/slurmctld /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ncuflow-local
SlurmctldHost=$NODE
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=600
SlurmdParameters=config_overrides
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmUser=root
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
NodeName=$NODE CPUs=$CPUS RealMemory=$MEMORY_MB Gres=gpu:$GPUS State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
echo "NodeName=$NODE Name=gpu File=$DEVICES" > /etc/slurm/gres.conf
[ -s /etc/munge/munge.key ] || mungekey --create
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pkill -x slurmctld || true
pkill -x slurmd || true
sleep 1
/usr/sbin/slurmctld -c
/usr/sbin/slurmd -c
for _ in $(seq 30); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then
    sinfo
    exit 0
  fi
  sleep 1
done
echo "Slurm did not come up: see /var/log/slurm/" >&2
exit 1
