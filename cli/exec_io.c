/* One command in a sandbox with the terminal's side of it: stdin, stdout
 * and stderr forwarded, a raw terminal and window size changes under -t,
 * SIGINT, SIGTERM and SIGHUP forwarded to the command (cove run, cove exec). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/exec_io.h"
#include "cli/options.h"
#include "cove.h"
#include "io.h"
#include "lib/base/text.h"

static volatile int pending_signal;
static volatile sig_atomic_t winch, got_signal;

static void forward_signal(int sig)
{
	pending_signal = sig;
	got_signal = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

static struct cli_stream out_streams[2];

void cli_stream_init(struct cli_stream *o, int fd)
{
	o->fd = fd;
	o->filter = isatty(fd);
	text_filter_init(&o->f);
}

void cli_stream_write(struct cli_stream *o, const void *data, size_t len)
{
	/* When our reader went away, the guest's output is dropped. */
	if (!o->filter) {
		(void)!write_all(o->fd, data, len);
		return;
	}
	char buf[4096];
	const unsigned char *p = data;
	while (len) {
		size_t take = len < sizeof(buf) / 2 ? len : sizeof(buf) / 2;
		size_t n = text_filter(&o->f, p, take, buf, sizeof(buf));
		(void)!write_all(o->fd, buf, n);
		p += take;
		len -= take;
	}
}

static void write_out(void *opaque, const void *data, size_t len)
{
	(void)opaque;
	cli_stream_write(&out_streams[0], data, len);
}

static void write_stderr(void *opaque, const void *data, size_t len)
{
	(void)opaque;
	cli_stream_write(&out_streams[1], data, len);
}

static bool get_winsize(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || !ws.ws_row)
		return false;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return true;
}

static bool resize_cb(void *opaque, uint16_t *rows, uint16_t *cols)
{
	(void)opaque;
	if (!winch)
		return false;
	winch = 0;
	return get_winsize(rows, cols);
}

int cli_exec_command(struct cove_sandbox *sb, const struct cli_exec *x, char **argv,
                     const char *prog, bool *ran)
{
	if (ran)
		*ran = false;
	/* SA_RESETHAND: a second signal ends us the default way at once. */
	struct sigaction sa = { .sa_handler = forward_signal, .sa_flags = SA_RESETHAND };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct termios saved;
	bool raw = false;
	struct cove_exec_opts eo = {
		.argv = (const char *const *)argv,
		.env = x->nenv ? x->env : NULL,
		.cwd = x->workdir,
		.user = x->user,
		.timeout_ms = (uint64_t)x->timeout_s * 1000,
		.pty = x->tty,
		.stdin_fd = x->interactive || !isatty(STDIN_FILENO) ? STDIN_FILENO : -1,
		.on_stdout = write_out,
		.on_stderr = write_stderr,
		.opaque = (void *)(intptr_t)STDOUT_FILENO,
		.pending_signal = &pending_signal,
	};
	for (int i = 0; i < 2; i++) {
		out_streams[i].fd = i ? STDERR_FILENO : STDOUT_FILENO;
		out_streams[i].filter = !x->tty && isatty(out_streams[i].fd);
		text_filter_init(&out_streams[i].f);
	}
	if (x->tty) {
		get_winsize(&eo.rows, &eo.cols);
		struct sigaction sw = { .sa_handler = on_winch };
		sigemptyset(&sw.sa_mask);
		sigaction(SIGWINCH, &sw, NULL);
		eo.resize = resize_cb;
		if (tcgetattr(STDIN_FILENO, &saved) == 0) {
			struct termios t = saved;
			cfmakeraw(&t);
			raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
		}
		/* In raw mode ^C is a byte for the guest's terminal. */
	}
	char err[512];
	struct cove_exec_result res;
	int r = cove_exec(sb, &eo, &res, err, sizeof(err));
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	if (r == -EINTR && got_signal)
		return 128 + got_signal; /* the sandbox did not answer in time */
	if (r < 0) {
		/* A sandbox that went away (its --ttl, a crash) says why; one that
		 * did not answer in time is not waited for again. */
		char why[512];
		int wait_ms = r == -ETIMEDOUT ? 0 : 2000;
		fprintf(stderr, "%s: %s\n", prog,
		        cove_sandbox_exited(sb, wait_ms, why, sizeof(why)) && why[0] ? why : err);
		if (r == -ETIMEDOUT && x->timeout_s)
			return 124;
		/* As shells do: 127 for a command not found, 126 for one that
		 * cannot run; 125 stays for failures of the sandbox itself. */
		return r == -ENOENT ? 127 : r == -EACCES || r == -ENOEXEC ? 126 : 125;
	}
	if (ran)
		*ran = true;
	if (res.timed_out)
		fprintf(stderr, "%s: timed out after %lu s\n", prog, x->timeout_s);
	return res.timed_out ? 124 : res.signal ? 128 + res.signal : res.exit_code;
}
