/* cove bench --work: one tracefs instance (instances/cove-work-PID) with
 * raw_syscalls:sys_enter, kvm:kvm_exit, sched:sched_process_fork and
 * sched:sched_process_exec on the mono clock, so that its times compare
 * with cove-vmm's own (times.* in {"op":"stats"}).  The trace is read after
 * tracing stops: the tracked processes and their descendants are found from
 * the fork events (pass 1), then their events counted (pass 2).  A private
 * instance leaves the host's own tracing as it was. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/kvm.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/bench_trace.h"
#include "cli/bench_work.h"
#include "errf.h"

#define WORK_BUFFER_KB  16384 /* per CPU: some 200,000 events each */
#define WORK_NR_MAX     1024  /* system call numbers counted by name */
#define WORK_PROCS_MAX  4096
#define WORK_REASON_MAX 128

/* A process's counters from /proc: faults and CPU ticks (stat), bytes
 * (io), ns on a CPU (its threads' schedstat). */
struct counters {
	bool ok;
	uint64_t minflt, majflt, utime, stime, gtime, rchar, wchar, cpu_ns;
};

struct pre_call {
	uint64_t seq, ts_us;
};

struct work_proc {
	int tgid;
	int parent; /* index of the tracked process that forked it, or -1 */
	bool tracked_by_caller;
	char name[32];
	char exe[64];      /* its exec event's file name */
	uint64_t exec_seq; /* its exec event's number (0: none in the window) */
	uint64_t mark_us;  /* work_mark_start(), 0: none */
	uint64_t syscalls;
	uint64_t *by_nr; /* WORK_NR_MAX + 1 (the last: beyond) */
	uint64_t first_run_seq;
	struct pre_call *pre; /* its calls before its first KVM_RUN */
	size_t npre, precap;
	struct counters c0, c1;
};

struct bench_work {
	int rootfd; /* tracefs */
	int dirfd;  /* the instance */
	int on_fd;  /* its tracing_on, kept open to stop at once */
	char inst[128];
	struct work_proc *p;
	size_t np;
	size_t ncaller; /* the first ncaller of p came from work_track() */
	uint64_t events, exits, mmio;
	struct {
		char name[32];
		uint64_t n;
	} reason[WORK_REASON_MAX];
	size_t nreason;
	char *names[WORK_NR_MAX];
	long ticks_per_s;
};

static const char *const reported[] = { "cove-vmm", "cove-egress", "coved", "cove" };

static int put(int dirfd, const char *path, const char *value)
{
	int fd = openat(dirfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

/* The tracefs root (/sys/kernel/tracing, debugfs's tracing, or a new
 * mount) as an fd, or -errno with err. */
static int tracefs_root(char *err, size_t errlen)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	int i = 0;
	for (; i < 2; i++) {
		char p[64];
		snprintf(p, sizeof(p), "%s/instances", roots[i]);
		if (access(p, F_OK) == 0)
			break;
	}
	if (i == 2) {
		i = 0;
		if (mount("tracefs", roots[0], "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
			return errf(err, errlen, -errno,
			            "--work needs tracefs: none at %s or %s, and mounting it "
			            "failed: %s",
			            roots[0], roots[1], strerror(errno));
	}
	int fd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "--work: cannot open %s: %s", roots[i],
		            strerror(errno));
	return fd;
}

/* Instances of bench processes that died without removing theirs. */
static void remove_stale(int root)
{
	int fd = openat(root, "instances", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid;
		char tail;
		if (sscanf(e->d_name, "cove-work-%d%c", &pid, &tail) == 1 && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

struct bench_work *work_open(char *err, size_t errlen)
{
	if (geteuid() != 0) {
		errf(err, errlen, -EPERM,
		     "--work needs root (it traces system calls with tracefs)");
		return NULL;
	}
	int root = tracefs_root(err, errlen);
	if (root < 0)
		return NULL;
	remove_stale(root);
	struct bench_work *w = calloc(1, sizeof(*w));
	if (!w) {
		close(root);
		errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	w->rootfd = root;
	w->dirfd = w->on_fd = -1;
	w->ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	snprintf(w->inst, sizeof(w->inst), "instances/cove-work-%d", (int)getpid());
	if (mkdirat(root, w->inst, 0700) < 0 && errno != EEXIST) {
		errf(err, errlen, -errno, "--work: cannot make the tracefs instance %s: %s",
		     w->inst, strerror(errno));
		goto fail;
	}
	w->dirfd = openat(root, w->inst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	w->on_fd = w->dirfd >= 0 ? openat(w->dirfd, "tracing_on", O_WRONLY | O_CLOEXEC) : -1;
	if (w->on_fd < 0 || write(w->on_fd, "0", 1) != 1) {
		errf(err, errlen, -errno, "--work: cannot open %s/tracing_on: %s", w->inst,
		     strerror(errno));
		goto fail;
	}
	char kb[16];
	snprintf(kb, sizeof(kb), "%d", WORK_BUFFER_KB);
	static const struct {
		const char *path, *value;
	} set[] = {
		{ "trace_clock", "mono" },
		{ "options/record-tgid", "1" },
		{ "events/raw_syscalls/sys_enter/enable", "1" },
		{ "events/kvm/kvm_exit/enable", "1" },
		{ "events/kvm/kvm_mmio/enable", "1" },
		{ "events/sched/sched_process_fork/enable", "1" },
		{ "events/sched/sched_process_exec/enable", "1" },
	};
	int r = put(w->dirfd, "buffer_size_kb", kb);
	if (r < 0)
		errf(err, errlen, r, "--work: cannot set %s/buffer_size_kb to %s: %s", w->inst, kb,
		     strerror(-r));
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]) && r == 0; i++)
		if ((r = put(w->dirfd, set[i].path, set[i].value)) < 0)
			errf(err, errlen, r, "--work: cannot set %s/%s: %s", w->inst, set[i].path,
			     strerror(-r));
	if (r < 0)
		goto fail;
	return w;
fail:
	work_close(w);
	return NULL;
}

/* The index of tgid in w->p, or -1. */
static int find(const struct bench_work *w, int tgid)
{
	for (size_t i = 0; i < w->np; i++)
		if (w->p[i].tgid == tgid)
			return (int)i;
	return -1;
}

static int add(struct bench_work *w, int tgid, int parent)
{
	if (w->np == WORK_PROCS_MAX)
		return -ENOSPC;
	struct work_proc *n = realloc(w->p, (w->np + 1) * sizeof(*w->p));
	if (!n)
		return -ENOMEM;
	w->p = n;
	w->p[w->np] = (struct work_proc){ .tgid = tgid, .parent = parent };
	return (int)w->np++;
}

int work_track(struct bench_work *w, pid_t pid, const char *name)
{
	int i = find(w, (int)pid);
	if (i < 0 && (i = add(w, (int)pid, -1)) < 0)
		return i;
	if ((size_t)i >= w->ncaller) {
		/* New, or forked during the last operation: moved into the
		 * caller's part (work_begin drops the rest). */
		struct work_proc t = w->p[i];
		w->p[i] = w->p[w->ncaller];
		w->p[w->ncaller] = t;
		i = (int)w->ncaller++;
		w->p[i].parent = -1;
	}
	w->p[i].tracked_by_caller = true;
	snprintf(w->p[i].name, sizeof(w->p[i].name), "%s", name);
	return 0;
}

void work_mark_start(struct bench_work *w, pid_t pid, uint64_t mono_us)
{
	int i = find(w, (int)pid);
	if (i >= 0)
		w->p[i].mark_us = mono_us;
}

/* A number of /proc's text after key (a line "key: N"), or 0. */
static uint64_t keyed(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

static void read_counters(int pid, struct counters *c)
{
	char path[96], buf[4096];
	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (slurp(path, buf, sizeof(buf)) <= 0)
		return;
	/* After the comm's last ')': field 3 onwards, one token each. */
	char *p = strrchr(buf, ')');
	uint64_t f[48] = { 0 };
	size_t nf = 0;
	char *save = NULL;
	for (char *t = p ? strtok_r(p + 1, " \n", &save) : NULL; t && nf < 48;
	     t = strtok_r(NULL, " \n", &save))
		f[nf++] = strtoull(t, NULL, 10);
	if (nf < 41)
		return;
	c->minflt = f[7]; /* field 10 */
	c->majflt = f[9];
	c->utime = f[11];
	c->stime = f[12];
	c->gtime = f[40]; /* field 43, guest_time */
	snprintf(path, sizeof(path), "/proc/%d/io", pid);
	if (slurp(path, buf, sizeof(buf)) > 0) {
		c->rchar = keyed(buf, "rchar: ");
		c->wchar = keyed(buf, "wchar: ");
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sp[160];
		snprintf(sp, sizeof(sp), "/proc/%d/task/%.32s/schedstat", pid, e->d_name);
		if (slurp(sp, buf, sizeof(buf)) > 0)
			c->cpu_ns += strtoull(buf, NULL, 10);
	}
	if (d)
		closedir(d);
	c->ok = true;
}

static void proc_reset(struct work_proc *p)
{
	free(p->by_nr);
	free(p->pre);
	p->by_nr = NULL;
	p->pre = NULL;
	p->npre = p->precap = 0;
	p->syscalls = p->exec_seq = p->first_run_seq = p->mark_us = 0;
	p->exe[0] = 0;
	memset(&p->c0, 0, sizeof(p->c0));
	memset(&p->c1, 0, sizeof(p->c1));
}

int work_begin(struct bench_work *w, char *err, size_t errlen)
{
	/* Only the caller's processes carry over from the last operation. */
	for (size_t i = 0; i < w->np; i++) {
		proc_reset(&w->p[i]);
		if (i >= w->ncaller)
			w->p[i].name[0] = 0;
	}
	w->np = w->ncaller;
	w->events = w->exits = 0;
	w->nreason = 0;
	int fd = openat(w->dirfd, "trace", O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "--work: cannot clear %s/trace: %s", w->inst,
		            strerror(errno));
	close(fd);
	for (size_t i = 0; i < w->np; i++)
		read_counters(w->p[i].tgid, &w->p[i].c0);
	if (write(w->on_fd, "1", 1) != 1)
		return errf(err, errlen, -errno, "--work: cannot start tracing: %s",
		            strerror(errno));
	return 0;
}

/* Events the kernel dropped or overwrote, from per_cpu/cpu*\/stats. */
static uint64_t lost_events(struct bench_work *w)
{
	uint64_t lost = 0;
	int fd = openat(w->dirfd, "per_cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	struct dirent *e;
	char buf[2048], path[300];
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "cpu", 3))
			continue;
		snprintf(path, sizeof(path), "per_cpu/%.64s/stats", e->d_name);
		int sfd = openat(w->dirfd, path, O_RDONLY | O_CLOEXEC);
		if (sfd < 0)
			continue;
		ssize_t n = read(sfd, buf, sizeof(buf) - 1);
		close(sfd);
		buf[n > 0 ? n : 0] = 0;
		char *save = NULL;
		for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			if (!strncmp(l, "overrun: ", 9) || !strncmp(l, "commit overrun: ", 16) ||
			    !strncmp(l, "dropped events: ", 16))
				lost += strtoull(strchr(l, ':') + 1, NULL, 10);
	}
	closedir(d);
	return lost;
}

static int count_reason(struct bench_work *w, const char *reason)
{
	for (size_t i = 0; i < w->nreason; i++)
		if (!strcmp(w->reason[i].name, reason)) {
			w->reason[i].n++;
			return 0;
		}
	if (w->nreason == WORK_REASON_MAX)
		return -ENOSPC;
	snprintf(w->reason[w->nreason].name, sizeof(w->reason[0].name), "%s", reason);
	w->reason[w->nreason++].n = 1;
	return 0;
}

/* One system call of tracked process p, the seq-th event. */
static int count_call(struct work_proc *p, const struct trace_event *ev, uint64_t seq)
{
	if (!p->by_nr && !(p->by_nr = calloc(WORK_NR_MAX + 1, sizeof(uint64_t))))
		return -ENOMEM;
	p->syscalls++;
	p->by_nr[ev->nr >= 0 && ev->nr < WORK_NR_MAX ? ev->nr : WORK_NR_MAX]++;
	if (p->first_run_seq)
		return 0;
	if (ev->nr == SYS_ioctl && ev->arg1 == KVM_RUN) {
		p->first_run_seq = seq;
		return 0;
	}
	if (p->npre == p->precap) {
		size_t cap = p->precap ? p->precap * 2 : 256;
		struct pre_call *n = realloc(p->pre, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->pre = n;
		p->precap = cap;
	}
	p->pre[p->npre++] = (struct pre_call){ seq, ev->ts_us };
	return 0;
}

/* One pass over the trace: pass 1 follows forks and execs, pass 2 counts. */
static int read_trace(struct bench_work *w, int pass, char *err, size_t errlen)
{
	int fd = openat(w->dirfd, "trace", O_RDONLY | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return errf(err, errlen, -errno, "--work: cannot read %s/trace: %s", w->inst,
		            strerror(errno));
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	uint64_t seq = 0;
	int r = 0;
	struct trace_event ev;
	while (r == 0 && (n = getline(&line, &cap, f)) > 0) {
		if (trace_parse_line(line, (size_t)n, &ev) < 0) {
			r = errf(err, errlen, -EPROTO, "--work: a trace line not understood: %.80s",
			         line);
			break;
		}
		if (ev.kind == TRACE_NONE)
			continue;
		seq++;
		if (ev.kind == TRACE_LOST) {
			r = errf(err, errlen, -EOVERFLOW,
			         "--work: the trace lost %llu events (buffer %d kB per CPU): the "
			         "counts would be wrong",
			         (unsigned long long)ev.lost, WORK_BUFFER_KB);
			break;
		}
		int i = find(w, ev.tgid ? ev.tgid : ev.pid);
		if (i < 0)
			continue;
		if (pass == 1 && ev.kind == TRACE_FORK && find(w, ev.child) < 0) {
			/* A thread's events carry its process's tgid: its entry
			 * stays empty and is not reported. */
			int x = add(w, ev.child, i);
			r = x < 0 ? x : 0;
		} else if (pass == 1 && ev.kind == TRACE_EXEC) {
			int x = find(w, ev.exec_pid);
			if (x >= 0) {
				snprintf(w->p[x].exe, sizeof(w->p[x].exe), "%s", ev.exe);
				w->p[x].exec_seq = seq;
			}
		} else if (pass == 2 && ev.kind == TRACE_SYSCALL) {
			w->events++;
			r = count_call(&w->p[i], &ev, seq);
		} else if (pass == 2 && ev.kind == TRACE_KVM_EXIT) {
			w->events++;
			w->exits++;
			r = count_reason(w, ev.reason);
		} else if (pass == 2 && ev.kind == TRACE_KVM_MMIO) {
			w->events++;
			w->mmio++;
		}
		if (r == -ENOMEM || r == -ENOSPC)
			errf(err, errlen, r, "--work: %s while counting",
			     r == -ENOMEM ? "out of memory" : "too many processes or exit reasons");
	}
	free(line);
	fclose(f);
	return r;
}

static bool is_reported(const char *name)
{
	for (size_t i = 0; i < sizeof(reported) / sizeof(reported[0]); i++)
		if (!strcmp(name, reported[i]))
			return true;
	return false;
}

/* A forked process's name: its binary's, its exec's, or its parent's. */
static void name_of(struct bench_work *w, size_t i)
{
	struct work_proc *p = &w->p[i];
	if (p->name[0])
		return;
	char path[64], exe[4096];
	snprintf(path, sizeof(path), "/proc/%d/exe", p->tgid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *del = strstr(exe, " (deleted)");
		if (del && !del[10])
			*del = 0;
		const char *base = strrchr(exe, '/');
		snprintf(p->name, sizeof(p->name), "%.31s", base ? base + 1 : exe);
	} else if (p->exe[0]) {
		snprintf(p->name, sizeof(p->name), "%.31s", p->exe);
	} else if (p->parent >= 0) {
		name_of(w, (size_t)p->parent);
		snprintf(p->name, sizeof(p->name), "%s", w->p[p->parent].name);
	}
}

int work_end(struct bench_work *w, char *err, size_t errlen)
{
	int stopped = write(w->on_fd, "0", 1) == 1 ? 0 : -errno;
	for (size_t i = 0; i < w->ncaller; i++)
		read_counters(w->p[i].tgid, &w->p[i].c1);
	if (stopped < 0)
		return errf(err, errlen, stopped, "--work: cannot stop tracing: %s",
		            strerror(-stopped));
	uint64_t lost = lost_events(w);
	if (lost)
		return errf(err, errlen, -EOVERFLOW,
		            "--work: the trace lost %llu events (buffer %d kB per CPU): the counts "
		            "would be wrong",
		            (unsigned long long)lost, WORK_BUFFER_KB);
	int r = read_trace(w, 1, err, errlen);
	if (r == 0)
		r = read_trace(w, 2, err, errlen);
	if (r < 0)
		return r;
	for (size_t i = w->ncaller; i < w->np; i++) {
		read_counters(w->p[i].tgid, &w->p[i].c1);
		w->p[i].c0 = (struct counters){ 0 }; /* it started in the window */
	}
	for (size_t i = 0; i < w->np; i++)
		name_of(w, i);
	return 0;
}

static const char *syscall_name(struct bench_work *w, size_t nr)
{
	if (nr >= WORK_NR_MAX)
		return "beyond";
	if (!w->names[nr]) {
		char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr);
		if (!s && asprintf(&s, "nr_%zu", nr) < 0)
			return "?";
		w->names[nr] = s;
	}
	return w->names[nr];
}

/* p's system calls from its start (its mark, its exec, or the window's
 * beginning) to its first KVM_RUN; -1 without a KVM_RUN. */
static json_int_t to_first_run(const struct work_proc *p)
{
	if (!p->first_run_seq)
		return -1;
	json_int_t n = 0;
	for (size_t k = 0; k < p->npre; k++)
		if (p->mark_us ? p->pre[k].ts_us >= p->mark_us : p->pre[k].seq > p->exec_seq)
			n++;
	return n;
}

static json_t *by_name_get(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	if (!v) {
		v = json_object();
		json_object_set_new(o, name, v);
	}
	return v;
}

static void add_int(json_t *o, const char *key, json_int_t v)
{
	json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + v));
}

static void add_real(json_t *o, const char *key, double v)
{
	json_object_set_new(o, key, json_real(json_number_value(json_object_get(o, key)) + v));
}

void work_json(struct bench_work *w, json_t *work)
{
	json_t *sc = json_object(), *each = json_array(), *faults = json_object(),
	       *bytes = json_object(), *cpu = json_object();
	json_int_t vmm_first = 0;
	double guest_ms = 0, tick_ms = 1000.0 / (double)w->ticks_per_s;
	for (size_t i = 0; i < w->np; i++) {
		struct work_proc *p = &w->p[i];
		if (!p->syscalls || !(p->tracked_by_caller || is_reported(p->name)))
			continue;
		json_t *s = by_name_get(sc, p->name);
		add_int(s, "processes", 1);
		add_int(s, "total", (json_int_t)p->syscalls);
		json_t *bn = by_name_get(s, "by_name");
		for (size_t nr = 0; nr <= WORK_NR_MAX; nr++)
			if (p->by_nr[nr])
				add_int(bn, syscall_name(w, nr), (json_int_t)p->by_nr[nr]);
		json_t *e = json_pack("{s:i, s:s, s:I}", "pid", p->tgid, "name", p->name, "total",
		                      (json_int_t)p->syscalls);
		json_int_t first = to_first_run(p);
		if (first >= 0) {
			json_object_set_new(e, "to_first_kvm_run", json_integer(first));
			if (!strcmp(p->name, "cove-vmm"))
				vmm_first += first;
		}
		json_array_append_new(each, e);
		if (!p->c1.ok)
			continue; /* it exited before the end */
		const struct counters *a = &p->c0, *b = &p->c1;
		json_t *fo = by_name_get(faults, p->name);
		add_int(fo, "minor", (json_int_t)(b->minflt - a->minflt));
		add_int(fo, "major", (json_int_t)(b->majflt - a->majflt));
		json_t *bo = by_name_get(bytes, p->name);
		add_int(bo, "rchar", (json_int_t)(b->rchar - a->rchar));
		add_int(bo, "wchar", (json_int_t)(b->wchar - a->wchar));
		add_int(bo, "total", (json_int_t)(b->rchar - a->rchar + b->wchar - a->wchar));
		json_t *co = by_name_get(cpu, p->name);
		add_real(co, "on_cpu", (double)(b->cpu_ns - a->cpu_ns) / 1e6);
		add_real(co, "user", (double)(b->utime - a->utime) * tick_ms);
		add_real(co, "system", (double)(b->stime - a->stime) * tick_ms);
		if (!strcmp(p->name, "cove-vmm"))
			guest_ms += (double)(b->gtime - a->gtime) * tick_ms;
	}
	json_object_set_new(cpu, "guest", json_real(guest_ms));
	json_t *reasons = json_object();
	for (size_t i = 0; i < w->nreason; i++)
		json_object_set_new(reasons, w->reason[i].name,
		                    json_integer((json_int_t)w->reason[i].n));
	json_object_set_new(work, "syscalls", sc);
	json_object_set_new(work, "syscalls_each", each);
	json_object_set_new(work, "vmm_syscalls_to_first_kvm_run", json_integer(vmm_first));
	json_object_set_new(work, "kvm_exits_traced",
	                    json_pack("{s:I, s:o, s:I}", "total", (json_int_t)w->exits, "by_reason",
	                              reasons, "mmio_accesses", (json_int_t)w->mmio));
	json_object_set_new(work, "faults", faults);
	json_object_set_new(work, "bytes_copied", bytes);
	json_object_set_new(work, "cpu_ms", cpu);
	json_object_set_new(work, "trace",
	                    json_pack("{s:I, s:s, s:i, s:i}", "events", (json_int_t)w->events,
	                              "clock", "mono", "buffer_kb_per_cpu", WORK_BUFFER_KB, "lost",
	                              0));
}

void work_close(struct bench_work *w)
{
	if (!w)
		return;
	if (w->on_fd >= 0) {
		if (write(w->on_fd, "0", 1) != 1) {
			/* closing the instance stops it anyway */
		}
		close(w->on_fd);
	}
	if (w->dirfd >= 0) {
		close(w->dirfd);
		(void)unlinkat(w->rootfd, w->inst, AT_REMOVEDIR);
	}
	close(w->rootfd);
	for (size_t i = 0; i < w->np; i++)
		proc_reset(&w->p[i]);
	for (size_t i = 0; i < WORK_NR_MAX; i++)
		free(w->names[i]);
	free(w->p);
	free(w);
}
