/* cove bench --work: exact counts of one operation's work, taken from a
 * tracefs instance of this process (bench_work.c): system calls by process
 * and name, KVM exits by reason, and from /proc each process's page
 * faults, bytes through read/write calls and CPU time.  Needs root.
 *
 * Call order: work_open(); work_track() for each process that exists
 * before the operation (this one, coved...); then per operation
 * work_begin(), the operation, work_end(), optionally work_mark_start(),
 * work_json(); at last work_close().  One thread at a time. */
#ifndef COVE_CLI_BENCH_WORK_H
#define COVE_CLI_BENCH_WORK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bench_work;

/* work_open() - checks for root and tracefs (mounts it at
 * /sys/kernel/tracing when neither it nor debugfs's copy is there) and makes
 * this process's tracefs instance, set up (clock mono, record-tgid, the
 * events), tracing off.  Return: the handle, or NULL with one line in err. */
struct bench_work *work_open(char *err, size_t errlen);

/* work_track() - attributes process pid, and every process it forks while
 * tracing (transitively), to @name ("cove", "coved", a pool member's
 * "cove-vmm").  Forked processes are named by their own binary where it is
 * cove-vmm, cove-egress, coved or cove; others are not reported.
 * Return: 0, or -ENOMEM. */
int work_track(struct bench_work *w, pid_t pid, const char *name);

/* work_begin() - clears the trace, reads the tracked processes' counters and
 * turns tracing on: call just before the operation.  0, or -errno with err. */
int work_begin(struct bench_work *w, char *err, size_t errlen);

/* work_end() - turns tracing off at once (call just after the operation's
 * last answer), then reads the trace and /proc.  Fails (-EOVERFLOW, one line
 * in err) when the kernel lost any event: a count would be wrong. */
int work_end(struct bench_work *w, char *err, size_t errlen);

/* work_mark_start() - where pid's start-to-first-KVM_RUN count begins: the
 * first system call at or after mono_us (CLOCK_MONOTONIC microseconds; a
 * pool member's start request).  Without a mark it begins at the process's
 * exec, or at work_begin() for a process that was already running. */
void work_mark_start(struct bench_work *w, pid_t pid, uint64_t mono_us);

/* work_json() - adds the counts of the last work_end() to the object work
 * (docs/benchmarks.md, "Work counts"). */
void work_json(struct bench_work *w, json_t *work);

/* work_close() - removes the instance and frees w (NULL is fine). */
void work_close(struct bench_work *w);

#endif
