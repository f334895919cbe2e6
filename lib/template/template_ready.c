/* Start commands (template_ready.h).  The port check reads the guest's
 * /proc/net/tcp and tcp6 through the agent, so it needs no program in the
 * image; that text comes from the guest and is parsed as hostile. */
#include "lib/template/template_ready.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "errf.h"
#include "lib/agent/proc.h"

bool template_port_listening(const char *text, size_t len, unsigned int port)
{
	size_t i = 0;
	while (i < len) {
		const char *line = text + i;
		const char *nl = memchr(line, '\n', len - i);
		size_t n = nl ? (size_t)(nl - line) : len - i;
		i += n + 1;
		/* "  N: ADDR:PORT REMADDR:PORT ST ..." */
		const char *colon = memchr(line, ':', n);
		if (!colon)
			continue;
		const char *p = colon + 1, *end = line + n;
		while (p < end && *p == ' ')
			p++;
		const char *addr_end = p;
		while (addr_end < end && *addr_end != ' ')
			addr_end++;
		const char *pc = addr_end;
		while (pc > p && pc[-1] != ':')
			pc--;
		if (pc == p || addr_end - pc != 4)
			continue;
		unsigned int lport = 0;
		bool ok = true;
		for (const char *h = pc; h < addr_end && ok; h++) {
			int d = *h >= '0' && *h <= '9'   ? *h - '0'
			        : *h >= 'A' && *h <= 'F' ? *h - 'A' + 10
			        : *h >= 'a' && *h <= 'f' ? *h - 'a' + 10
			                                 : -1;
			ok = d >= 0;
			lport = lport * 16 + (unsigned)(d < 0 ? 0 : d);
		}
		/* The remote address, then the state. */
		const char *q = addr_end;
		while (q < end && *q == ' ')
			q++;
		while (q < end && *q != ' ')
			q++;
		while (q < end && *q == ' ')
			q++;
		if (ok && lport == port && end - q >= 2 && q[0] == '0' && q[1] == 'A')
			return true;
	}
	return false;
}

static bool guest_listening(struct cove_sandbox *sb, unsigned int port)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	for (size_t f = 0; f < 2; f++) {
		char e[256];
		uint64_t size;
		int fd = cove_get_begin(sb, files[f], &size, e, sizeof(e));
		if (fd < 0)
			continue;
		char *text = malloc(READY_NET_MAX);
		size_t len = 0;
		bool found = false;
		for (;;) {
			uint8_t *d = NULL;
			uint32_t n = 0;
			if (!text || cove_get_next(fd, &d, &n, e, sizeof(e)) < 0 || n == 0) {
				free(d);
				break;
			}
			size_t take = n < READY_NET_MAX - len ? n : READY_NET_MAX - len;
			memcpy(text + len, d, take);
			len += take;
			free(d);
		}
		close(fd);
		found = text && template_port_listening(text, len, port);
		free(text);
		if (found)
			return true;
	}
	return false;
}

/* 1 when the start process has ended (its status in *status), 0 while
 * it runs, -errno when the agent cannot say. */
static int proc_ended(struct cove_sandbox *sb, int pid, int *status, char *err, size_t errlen)
{
	json_t *procs = NULL;
	int r = cove_proc_list(sb, &procs, err, errlen);
	if (r < 0)
		return r;
	size_t i;
	json_t *p;
	r = errf(err, errlen, -ESRCH, "the agent lost the start command (pid %d)", pid);
	json_array_foreach(procs, i, p)
	{
		if (json_integer_value(json_object_get(p, "pid")) != pid)
			continue;
		r = json_is_true(json_object_get(p, "running")) ? 0 : 1;
		json_t *sig = json_object_get(p, "signal");
		*status = json_is_integer(sig)
		              ? 128 + (int)json_integer_value(sig)
		              : (int)json_integer_value(json_object_get(p, "code"));
		break;
	}
	json_decref(procs);
	return r;
}

static bool ready_cmd_passes(struct cove_sandbox *sb, const char *cmd, int64_t left_ms)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct cove_exec_opts o = {
		.argv = argv,
		.stdin_fd = -1,
		.timeout_ms = (uint64_t)(left_ms > 0 ? left_ms : 1),
	};
	struct cove_exec_result res;
	char e[256];
	return cove_exec(sb, &o, &res, e, sizeof(e)) == 0 && !res.signal && res.exit_code == 0;
}

int template_start_ready(struct cove_sandbox *sb, const struct cove_template_spec *s,
                         const struct cove_template_io *io, char *err, size_t errlen)
{
	const char *argv[] = { "/bin/sh", "-c", s->start_cmd, NULL };
	struct cove_proc_spec ps = { .argv = argv, .tag = "cove-start" };
	char e[512];
	int pid;
	int r = cove_proc_start(sb, &ps, &pid, e, sizeof(e));
	if (r < 0)
		return errf(err, errlen, r, "start command: %s", e);
	unsigned int limit = s->ready_timeout_s ? s->ready_timeout_s : READY_TIMEOUT_S;
	int64_t t0 = mono_ms(), deadline = t0 + (int64_t)limit * 1000;
	if (io && io->note) {
		char line[256];
		snprintf(line, sizeof(line), "start command running (pid %d), waiting for %s", pid,
		         s->ready_port  ? "its port"
		         : s->ready_cmd ? "its ready check"
		                        : "it");
		io->note(io->opaque, line);
	}
	for (int tries = 0;; tries++) {
		int status = 0;
		if ((r = proc_ended(sb, pid, &status, e, sizeof(e))) < 0)
			return errf(err, errlen, r, "start command: %s", e);
		if (r == 1)
			return errf(err, errlen, -ECHILD,
			            "the start command ended (status %d) before it was ready",
			            status);
		bool ready = s->ready_port ? guest_listening(sb, s->ready_port)
		             : s->ready_cmd
		                 ? ready_cmd_passes(sb, s->ready_cmd, deadline - mono_ms())
		                 : tries > 0;
		if (ready)
			break;
		if (mono_ms() >= deadline)
			return errf(err, errlen, -ETIMEDOUT,
			            "the start command was not ready in %u s", limit);
		struct timespec ts = { 0, READY_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (io && io->note) {
		char line[128];
		snprintf(line, sizeof(line), "start command ready after %lld ms",
		         (long long)(mono_ms() - t0));
		io->note(io->opaque, line);
	}
	return 0;
}
