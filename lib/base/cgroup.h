/* A sandbox's cgroup v2: where it goes, the limits written into it, and
 * its removal.  cove-vmm is started inside it (clone3 CLONE_INTO_CGROUP),
 * so no instant of the VMM runs unconfined. */
#ifndef COVE_LIB_CGROUP_H
#define COVE_LIB_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What cove-vmm costs beyond guest RAM, as memory.max counts it: the
 * process (about 2 MiB outside guest RAM), KVM's page tables and vCPU
 * state, the kernel memory of its sockets and the page cache of its disk
 * writes.  Measured: 2 MiB above guest RAM at peak (docs/jail.md,
 * "Host-enforced limits: cgroup v2"). */
#define CGROUP_VMM_OVERHEAD_MIB 32

/* The pids.max default: the VMM's threads (main, I/O, API, one per vCPU)
 * with room to spare; cove-vmm never forks. */
#define CGROUP_PIDS_SPARE 16

struct cgroup_limits {
	double cpu_quota;      /* CPUs of time per period (cpu.max); 0: no quota */
	uint64_t memory_bytes; /* memory.max (swap.max is 0); 0: no limit */
	uint64_t pids_max;     /* pids.max; 0: no limit */
};

/* The cgroup v2 mount point, or -ENOENT. */
int cgroup_mount(char *mnt, size_t len);

/* Creates the sandbox's cgroup <parent>/<name> (parent: $COVE_CGROUP_PARENT,
 * else <cgroup2 mount>/cove when root, else the caller's own cgroup when it
 * is delegated to it), enables the controllers on the way and writes the
 * limits.  Returns 0 with *fd (the directory, for CLONE_INTO_CGROUP) and
 * path filled; 1 when cgroups cannot be used here, with *fd = -1 and one
 * line in note saying why and that the limits are not applied; -errno with
 * err for a failure that must stop the start (a limit the kernel
 * refused). */
int cgroup_create(const char *name, const struct cgroup_limits *l, int *fd, char *path,
                  size_t pathlen, char *note, size_t notelen, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Moves the process pid into the cgroup at path (cgroup.procs): a pooled
 * VMM taken by a sandbox.  0 or -errno. */
int cgroup_move(const char *path, pid_t pid) __attribute__((warn_unused_result));

/* Removes the cgroup a sandbox of this name was given, found the way
 * cgroup_create finds it (for handles that did not create it). */
void cgroup_remove_named(const char *name);

/* A snapshot's memory file is written by cove-vmm, and its pages are
 * charged to the VMM's cgroup (for good, on tmpfs): with a restored guest,
 * whose memory is a private mapping of the last snapshot's file, that
 * passed memory.max and the kernel killed the VMM mid-snapshot.  So while
 * the guest is paused for a snapshot, memory.max of the sandbox `name` is
 * doubled (the file is at most guest RAM), and afterwards, for a guest that
 * goes on running, settled at the old limit plus what the snapshot added
 * to memory.current (the file's pages; lowering the limit below them would
 * make the kernel kill the VMM).  A sandbox stopped after its snapshot
 * needs no settling: its cgroup goes.  0 or -errno (the raise refused). */
struct cgroup_raise {
	bool raised;
	uint64_t max, current; /* memory.max and memory.current before */
};
int cgroup_memory_raise(const char *name, struct cgroup_raise *cr)
    __attribute__((warn_unused_result));
void cgroup_memory_settle(const char *name, const struct cgroup_raise *cr);

/* What a sandbox's cgroup has used so far: CPU time (cpu.stat
 * usage_usec), memory charged to it (memory.current) and the page cache
 * part of that (memory.stat file). */
struct cgroup_usage {
	uint64_t cpu_usec, mem_bytes, file_bytes;
};
/* The usage of the cgroup the sandbox `name` was given (found as
 * cgroup_create finds it): 0, or -ENOENT when there is none to read. */
int cgroup_usage_named(const char *name, struct cgroup_usage *u)
    __attribute__((warn_unused_result));
/* The number after `key` on its own line ("key N\n") in a cgroup's flat
 * keyed file (cpu.stat, memory.stat): 0 with *v, or -ENOENT.  Pure. */
int cgroup_keyed_u64(const char *text, const char *key, uint64_t *v)
    __attribute__((warn_unused_result));

/* One number in a kernel file (a cgroup's memory.current, a link's
 * /sys/class/net/.../statistics/rx_bytes): decimal digits and at most a
 * newline: 0 with *v, else -EINVAL ("max" too).  Pure. */
int kfile_u64_parse(const char *text, uint64_t *v) __attribute__((warn_unused_result));
/* The file at path read as kfile_u64_parse reads it: 0, or -errno or
 * -EINVAL. */
int kfile_u64(const char *path, uint64_t *v) __attribute__((warn_unused_result));

/* Removes the cgroup at path once its processes are gone (waits up to
 * 2 s for the kernel to let them go). */
void cgroup_remove(const char *path);

#endif
