/* The tracefs `trace` text of the events cove bench --work counts.  The
 * kernel writes each line as "%16s-%-7d (%7d) [%03d] FLAGS %5lu.%06lu: "
 * then the event's name and body.  A comm is any 15 bytes its process
 * chose, so the line is read from its fixed punctuation, and every read
 * is checked against len. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cli/bench_trace.h"

struct cur {
	const char *s;
	size_t i, n;
};

static bool at_end(const struct cur *c)
{
	return c->i >= c->n;
}

static void skip_spaces(struct cur *c)
{
	while (!at_end(c) && c->s[c->i] == ' ')
		c->i++;
}

/* Whether the text at c starts with lit; if so, c moves past it. */
static bool take(struct cur *c, const char *lit)
{
	size_t l = strlen(lit);
	if (c->n - c->i < l || memcmp(c->s + c->i, lit, l))
		return false;
	c->i += l;
	return true;
}

/* An unsigned number in base 10 or 16 (no prefix), at least one digit,
 * refusing overflow. */
static bool number(struct cur *c, unsigned base, uint64_t *out)
{
	uint64_t v = 0;
	size_t start = c->i;
	for (; !at_end(c); c->i++) {
		char ch = c->s[c->i];
		unsigned d;
		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return c->i > start;
}

static bool small_int(struct cur *c, int *out)
{
	uint64_t v;
	if (!number(c, 10, &v) || v > 0x7fffffff)
		return false;
	*out = (int)v;
	return true;
}

/* "-PID (TGID) [CPU] " with '(' at c->i - the part after the comm; the
 * cursor ends after "] ". */
static bool context(struct cur *c, size_t open, struct trace_event *ev)
{
	/* Back from '(' over the pid's padding and digits to its '-'. */
	size_t j = open;
	while (j > 0 && c->s[j - 1] == ' ')
		j--;
	size_t digits_end = j;
	while (j > 0 && c->s[j - 1] >= '0' && c->s[j - 1] <= '9')
		j--;
	if (j == digits_end || j == 0 || c->s[j - 1] != '-')
		return false;
	struct cur p = { c->s, j, digits_end };
	if (!small_int(&p, &ev->pid))
		return false;
	c->i = open + 1;
	skip_spaces(c);
	if (take(c, "-------"))
		ev->tgid = 0;
	else if (!small_int(c, &ev->tgid))
		return false;
	int cpu;
	return take(c, ") [") && small_int(c, &cpu) && take(c, "] ");
}

/* SECS.USECS: after the optional flags field. */
static bool timestamp(struct cur *c, uint64_t *us)
{
	uint64_t s, u;
	size_t save = c->i;
	skip_spaces(c);
	if (!(number(c, 10, &s) && take(c, ".") && number(c, 10, &u) && take(c, ": "))) {
		/* The flags ("d..1." and the like) came first. */
		c->i = save;
		while (!at_end(c) && c->s[c->i] != ' ')
			c->i++;
		skip_spaces(c);
		if (!(number(c, 10, &s) && take(c, ".") && number(c, 10, &u) && take(c, ": ")))
			return false;
	}
	if (u >= 1000000 || s > UINT64_MAX / 1000000 - 1)
		return false;
	*us = s * 1000000 + u;
	return true;
}

/* The last occurrence of key in [c->i, c->n), or SIZE_MAX. */
static size_t last_of(const struct cur *c, const char *key)
{
	size_t l = strlen(key), found = SIZE_MAX;
	for (size_t k = c->i; k + l <= c->n; k++)
		if (!memcmp(c->s + k, key, l))
			found = k;
	return found;
}

/* Copies the token at c (to a space or the end) into dst, cut to fit. */
static void token(struct cur *c, char *dst, size_t dstlen)
{
	size_t k = 0;
	for (; !at_end(c) && c->s[c->i] != ' '; c->i++)
		if (k + 1 < dstlen)
			dst[k++] = c->s[c->i];
	dst[k] = 0;
}

/* "NR n (a0, a1, ...)" */
static int body_syscall(struct cur *c, struct trace_event *ev)
{
	uint64_t nr, a0;
	if (!take(c, "NR ") || !number(c, 10, &nr) || nr > 0x7fffffff)
		return -EINVAL;
	ev->nr = (long)nr;
	if (take(c, " (") && number(c, 16, &a0) && take(c, ", ") && number(c, 16, &ev->arg1))
		return 0;
	ev->arg1 = 0; /* a cut body: the number stands, the arguments do not */
	return 0;
}

/* "vcpu N reason NAME ..." (older kernels: "reason NAME ..."): the first
 * "reason " is the field. */
static int body_kvm_exit(struct cur *c, struct trace_event *ev)
{
	for (size_t j = c->i; j + 7 <= c->n; j++)
		if (!memcmp(c->s + j, "reason ", 7)) {
			c->i = j + 7;
			token(c, ev->reason, sizeof(ev->reason));
			return ev->reason[0] ? 0 : -EINVAL;
		}
	return -EINVAL;
}

/* "mmio read|write len N gpa 0xG val 0xV" is an access done (a read once
 * its value came back); "mmio unsatisfied-read ..." is a read on its way
 * out to the VMM, counted when it comes back as "read": not an event here. */
static int body_kvm_mmio(struct cur *c, struct trace_event *ev)
{
	char op[24];
	uint64_t len;
	if (!take(c, "mmio "))
		return -EINVAL;
	token(c, op, sizeof(op));
	if (!take(c, " len ") || !number(c, 10, &len) || !take(c, " gpa 0x") ||
	    !number(c, 16, &ev->gpa))
		return -EINVAL;
	if (!strcmp(op, "unsatisfied-read"))
		return 1;
	return !strcmp(op, "read") || !strcmp(op, "write") ? 0 : -EINVAL;
}

/* "comm=P pid=N child_comm=C child_pid=M": a comm may hold anything, so
 * the last child_pid= is the field. */
static int body_fork(struct cur *c, struct trace_event *ev)
{
	size_t k = last_of(c, " child_pid=");
	if (k == SIZE_MAX)
		return -EINVAL;
	c->i = k + 11;
	return small_int(c, &ev->child) && at_end(c) ? 0 : -EINVAL;
}

/* "filename=PATH pid=N old_pid=M": a path may hold anything, so the last
 * " pid=" is the field. */
static int body_exec(struct cur *c, struct trace_event *ev)
{
	size_t k = last_of(c, " pid=");
	if (!take(c, "filename=") || k == SIZE_MAX || k < c->i)
		return -EINVAL;
	/* The name's last part: after the last '/' before k. */
	size_t from = c->i;
	for (size_t j = c->i; j < k; j++)
		if (c->s[j] == '/')
			from = j + 1;
	size_t l = k - from < sizeof(ev->exe) - 1 ? k - from : sizeof(ev->exe) - 1;
	memcpy(ev->exe, c->s + from, l);
	ev->exe[l] = 0;
	c->i = k + 5;
	int old;
	return small_int(c, &ev->exec_pid) && take(c, " old_pid=") && small_int(c, &old) &&
	               at_end(c)
	           ? 0
	           : -EINVAL;
}

/* "CPU:N [LOST M EVENTS]" */
static int lost_line(struct cur *c, struct trace_event *ev)
{
	int cpu;
	if (!small_int(c, &cpu) || !take(c, " [LOST ") || !number(c, 10, &ev->lost) ||
	    !take(c, " EVENTS]"))
		return -EINVAL;
	ev->kind = TRACE_LOST;
	return 0;
}

int trace_parse_line(const char *line, size_t len, struct trace_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->nr = -1;
	struct cur c = { line, 0, len };
	while (c.n > 0 && (line[c.n - 1] == '\n' || line[c.n - 1] == '\r'))
		c.n--;
	if (c.n == 0 || line[0] == '#')
		return 0;
	if (take(&c, "CPU:"))
		return lost_line(&c, ev);
	/* The tgid's '(' comes after the 16-wide comm, '-' and the pid: the
	 * first '(' that makes a whole context is it. */
	bool found = false;
	for (size_t open = 2; open < c.n && open < 64 && !found; open++) {
		if (line[open] != '(')
			continue;
		struct cur t = c;
		struct trace_event e = *ev;
		if (context(&t, open, &e)) {
			found = true;
			c = t;
			*ev = e;
		}
	}
	if (!found || !timestamp(&c, &ev->ts_us))
		return -EINVAL;
	static const struct {
		const char *name;
		enum trace_kind kind;
		int (*body)(struct cur *, struct trace_event *);
	} events[] = {
		{ "sys_enter: ", TRACE_SYSCALL, body_syscall },
		{ "kvm_exit: ", TRACE_KVM_EXIT, body_kvm_exit },
		{ "kvm_mmio: ", TRACE_KVM_MMIO, body_kvm_mmio },
		{ "sched_process_fork: ", TRACE_FORK, body_fork },
		{ "sched_process_exec: ", TRACE_EXEC, body_exec },
	};
	for (size_t k = 0; k < sizeof(events) / sizeof(events[0]); k++)
		if (take(&c, events[k].name)) {
			int r = events[k].body(&c, ev);
			if (r == 0)
				ev->kind = events[k].kind;
			return r < 0 ? r : 0; /* 1: an event not counted */
		}
	return 0; /* another event */
}
