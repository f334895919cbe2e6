/* The sandbox registry: one directory per sandbox under the runtime base
 * ($COVE_RUNTIME_DIR, $XDG_RUNTIME_DIR/cove, /run/cove for root, else
 * /tmp/cove-<uid>), named after the sandbox.  mkdir() of that directory is
 * the name's lock; its meta.json says who runs it, so any cove process can
 * find a sandbox, and tell a live one from one whose cove-vmm died.
 *
 * meta.json (version 1), replaced atomically (written aside, renamed):
 *   {"version": 1, "name": S, "pid": N, "pid_start": N, "starting": B,
 *    "cpus": N, "memory_mib": N, "image": S | "restored_from": S,
 *    "created": N, "cpu_quota": X, "pids_max": N, "disk_size": N,
 *    "disk_bps": N, "disk_iops": N, "ttl_s": N,
 *    "net": {"index": K, "policy": {"mode": S, "allow": [S], "deny": [S]},
 *            "limits": S}, "egress_pid": N, "egress_start": N}
 * (the limits, registry_limits, are written when set and read as 0 when
 * absent; "net" and the egress only for a sandbox with a network).
 * While "starting" is true, pid is the process creating the sandbox; after
 * that it is cove-vmm.  pid_start is field 22 of /proc/PID/stat (clock
 * ticks after boot), which tells a reused pid apart.  created is Unix
 * time in seconds. */
#ifndef COVE_REGISTRY_H
#define COVE_REGISTRY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REGISTRY_NAME_MAX 32
#define REGISTRY_META     "meta.json"
/* The longest entry path <base>/<name>, terminator included.  Unix socket
 * paths are at most 107 bytes, the sockets live in the entry's jail root
 * (<entry>/root/vsock) and the VMM appends "_<port>" to the vsock's path,
 * so the directory is kept short. */
#define REGISTRY_DIR_MAX 84
/* An entry without meta.json younger than this (seconds) is being created;
 * an older one is dead. */
#define REGISTRY_CREATE_GRACE_S 30

/* The host-enforced limits of a sandbox (struct cove_config's), as
 * meta.json and a snapshot's note record them; 0: none. */
struct registry_limits {
	double cpu_quota;
	uint64_t pids_max, disk_size, disk_bps, disk_iops, ttl_s;
};

struct json_t;

/* A sandbox's network, as meta.json and a snapshot's note record it. */
#define REGISTRY_NET_POLICY_MAX 32768
#define REGISTRY_NET_LIMITS_MAX 256
struct registry_net {
	bool on;
	unsigned int index;                   /* K: .net/<K>, link cv<K> (meta.json only) */
	char policy[REGISTRY_NET_POLICY_MAX]; /* compact JSON object */
	char limits[REGISTRY_NET_LIMITS_MAX]; /* cove-vmm --net limits, or "" */
	pid_t egress_pid;                     /* meta.json only; 0: none yet */
	uint64_t egress_start;
};

/* "net" as a member of o (when on; with_index: meta.json's index and
 * egress), and back (absent: off; -EPROTO when malformed). */
int registry_net_put(struct json_t *o, const struct registry_net *n, bool with_index);
int registry_net_get(struct json_t *o, struct registry_net *n) __attribute__((warn_unused_result));

struct registry_meta {
	char name[REGISTRY_NAME_MAX + 1];
	pid_t pid;
	uint64_t pid_start;
	bool starting;
	unsigned int cpus;
	uint64_t memory_mib;
	char image[PATH_MAX];         /* "" when restored */
	char restored_from[PATH_MAX]; /* "" when booted from an image */
	int64_t created;
	struct registry_limits limits;
	struct registry_net net;
};

/* The limits as members of the JSON object o (those that are set), and
 * back (absent: 0; -EPROTO for a negative, non-number or absurd value). */
int registry_limits_put(struct json_t *o, const struct registry_limits *l);
int registry_limits_get(struct json_t *o, struct registry_limits *l)
    __attribute__((warn_unused_result));

/* 1 to 32 of [A-Za-z0-9_.-], not starting with '.' (so "." and ".." and
 * the registry's own hidden names are never sandbox names). */
bool registry_name_valid(const char *name);

/* Writes the runtime base into out, creates it (0700) and checks it with
 * registry_check_base.  -ENAMETOOLONG when <base>/<longest name>/ would
 * leave no room for the Unix socket paths inside it (REGISTRY_DIR_MAX).
 * A one-line message in err on failure. */
int registry_base(char *out, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The base must be ours alone: a real directory (lstat: no symlink) of
 * the effective uid with no group or other permissions.  Whoever could
 * create it first (/tmp/cove-<uid>) or write into it would control every
 * socket, disk and log of our sandboxes.  -EPERM with a message naming
 * the path, its owner and mode, and what to do. */
int registry_check_base(const char *path, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* An O_DIRECTORY | O_NOFOLLOW fd of a sandbox directory, or -errno. */
int registry_dir_open(const char *dir) __attribute__((warn_unused_result));

/* meta.json in dir: write (atomically) and read.  read returns -ENOENT
 * when there is none, -EPROTO when it is malformed. */
int registry_meta_write(const char *dir, const struct registry_meta *m)
    __attribute__((warn_unused_result));
int registry_meta_read(const char *dir, struct registry_meta *m)
    __attribute__((warn_unused_result));

/* Parses the text of /proc/PID/stat: the state letter (field 3) and the
 * start time (field 22).  The command name (field 2) may hold spaces and
 * parentheses; the fields start after its last ')'.  -EPROTO when the
 * text is short or malformed. */
int registry_parse_stat(const char *text, char *state, uint64_t *start)
    __attribute__((warn_unused_result));

/* The start time of a live process; -ESRCH when it is gone or a zombie. */
int registry_proc_start(pid_t pid, uint64_t *start) __attribute__((warn_unused_result));

/* The command name ("Name:") and effective uid (the second "Uid:" field)
 * from the text of /proc/PID/status.  -EPROTO when one is missing. */
int registry_parse_status(const char *text, char *name, size_t namelen, uid_t *euid)
    __attribute__((warn_unused_result));

/* What a running cove-vmm's comm reads. */
#define REGISTRY_VMM_COMM "cove-vmm"

/* 0 when pid is a cove-vmm (its comm) of this user (its effective uid;
 * any uid when we are root, whose VMMs run under uids of their own):
 * checked before a recorded pid is ever signalled.  -EPERM when it is
 * another program or another user's, -ESRCH when it is gone. */
int registry_proc_is_vmm(pid_t pid) __attribute__((warn_unused_result));

/* The name of cove-egress's binary, and the check before its recorded
 * pid is signalled: start time and the binary's name (/proc/PID/exe; any
 * uid: it runs under a jail uid of its own, and only root starts
 * sandboxes with networks). */
#define REGISTRY_EGRESS_COMM "cove-egress"
int registry_proc_is_egress(pid_t pid, uint64_t start) __attribute__((warn_unused_result));

/* Whether the process the record names still runs: pid exists, is not a
 * zombie and started when the record says. */
bool registry_alive(const struct registry_meta *m);

/* Removes the entry <base>/<name> that was seen dead with record seen (NULL:
 * it had no readable meta.json).  It is first renamed aside and its record
 * compared again, so an entry that a new sandbox took over in the meantime
 * is put back (-EBUSY) instead of deleted.  0 also when it is already gone. */
int registry_remove_dead(const char *base, const char *name, const struct registry_meta *seen);

/* rm -rf of a sandbox directory (its files and any subdirectory). */
int registry_remove_tree(const char *path);

#endif
