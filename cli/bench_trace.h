/* One line of a tracefs `trace` file, parsed (bench_trace.c): the events
 * cove bench --work counts.  Pure code, no I/O: unit-tested. */
#ifndef COVE_CLI_BENCH_TRACE_H
#define COVE_CLI_BENCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

enum trace_kind {
	TRACE_NONE,     /* a header, an empty line or another event */
	TRACE_SYSCALL,  /* raw_syscalls:sys_enter */
	TRACE_KVM_EXIT, /* kvm:kvm_exit */
	TRACE_KVM_MMIO, /* kvm:kvm_mmio, a guest access done (not "unsatisfied-read") */
	TRACE_FORK,     /* sched:sched_process_fork */
	TRACE_EXEC,     /* sched:sched_process_exec */
	TRACE_LOST,     /* "CPU:N [LOST M EVENTS]" */
};

struct trace_event {
	enum trace_kind kind;
	int pid;         /* the thread that made the event */
	int tgid;        /* its process (record-tgid); 0 when the trace did not know it */
	uint64_t ts_us;  /* the trace clock, microseconds */
	long nr;         /* SYSCALL: its number; -1 when the body was cut short */
	uint64_t arg1;   /* SYSCALL: its second argument (ioctl's request) */
	char reason[32]; /* KVM_EXIT: the exit reason's name */
	uint64_t gpa;    /* KVM_MMIO: the guest physical address */
	int child;       /* FORK: the new task's pid */
	int exec_pid;    /* EXEC: the process that exec'd */
	char exe[64];    /* EXEC: the file name's last part, cut to fit */
	uint64_t lost;   /* LOST: the events the kernel dropped */
};

/* trace_parse_line() - parses line[0..len) (no newline needed) of a trace
 * written with options/record-tgid, any trace clock counting in ns.
 * @ev: filled; ev->kind TRACE_NONE for headers and events not above.
 * Return: 0, or -EINVAL when a line that is not a header does not have
 * the shape "COMM-PID (TGID) [CPU] [FLAGS] SECS.USECS: EVENT: BODY". */
int trace_parse_line(const char *line, size_t len, struct trace_event *ev);

#endif
