"""sysstat.py: what the benchmark reads from /proc: CPU ticks and memory of process trees,
the machine's CPU use and load average, and a description of the machine.

Not for: deciding anything (bench.py does). Stdlib only; Linux only.
"""

import os
import platform

HZ = os.sysconf("SC_CLK_TCK")


def proc_stat(pid):
    """(ppid, cpu ticks of the process and its reaped children) or None when gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), sum(int(x) for x in fields[11:15])


def descendants(roots):
    """The live processes of the trees under roots, roots included."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                children.setdefault(st[0], []).append(int(name))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        if proc_stat(pid) is not None:
            out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_ticks(pids):
    """CPU ticks of these processes, each with its reaped children (utime + stime +
    cutime + cstime): a child that exits moves its time into its parent's."""
    return sum(st[1] for st in map(proc_stat, pids) if st is not None)


def kernel_ticks():
    """pid -> CPU ticks of the kernel's threads (children of kthreadd, pid 2): writeback,
    the journal, work queues. A run's fsyncs cost CPU there, in no process of its own.
    Threads come and go: compare two of these with kernel_delta."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None and (st[0] == 2 or name == "2"):
                out[int(name)] = st[1]
    return out


def kernel_delta(before, after):
    """Ticks the kernel threads spent between two kernel_ticks(): a thread that exited in
    between is lost (little), one that started counts whole."""
    return sum(t - before.get(pid, 0) for pid, t in after.items() if t >= before.get(pid, 0))


def _status_kib(path, field):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid):
    return _status_kib("/proc/%d/status" % pid, "VmRSS:")


def pss_kib(pid):
    """Proportional set size: shared pages divided among the processes that map them
    (what summing VmRSS over several processes of one program counts several times)."""
    return _status_kib("/proc/%d/smaps_rollup" % pid, "Pss:")


def machine_ticks():
    """(busy, steal, total) ticks of all CPUs since boot, from /proc/stat. Busy is
    user + nice + system + irq + softirq; steal is time the hypervisor gave to others."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (8 - len(v))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


def loadavg():
    """The 1-minute load average."""
    return os.getloadavg()[0]


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gib": round(mem_kib / 1048576, 1),
            "kernel": platform.release(), "load_at_start": os.getloadavg()}
