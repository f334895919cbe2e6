/* cove run: boot a sandbox, copy files in, run one command with its
 * output streamed, copy files out, tear the sandbox down.  Exits with the
 * command's status (128+N when a signal N killed it, 124 on --timeout). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "cove.h"

#define MAX_LIST 64

static const char run_usage[] =
    "usage: cove run [--cpus N] [--memory MiB] [--image minimal|debian|PATH]\n"
    "                [--kernel PATH] [-e K=V]... [-w DIR] [--timeout S]\n"
    "                [--put LOCAL:GUEST]... [--get GUEST:LOCAL]... [-it]\n"
    "                -- CMD [ARGS...]\n";

static volatile int pending_signal;
static volatile sig_atomic_t winch;

static void forward_signal(int sig)
{
	pending_signal = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

static void write_out(void *opaque, const void *data, size_t len)
{
	int fd = (int)(intptr_t)opaque;
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* our reader went away; the guest's output is dropped */
		p += n;
		len -= (size_t)n;
	}
}

static void write_stderr(void *opaque, const void *data, size_t len)
{
	(void)opaque;
	write_out((void *)(intptr_t)STDERR_FILENO, data, len);
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

static int parse_num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* "A:B" -> A and B (split at the first ':'). */
static int split_pair(char *s, char **a, char **b)
{
	char *c = strchr(s, ':');
	if (!c || c == s || !c[1])
		return -1;
	*c = 0;
	*a = s;
	*b = c + 1;
	return 0;
}

int cli_run(int argc, char **argv)
{
	enum { O_CPUS = 256, O_MEMORY, O_IMAGE, O_KERNEL, O_TIMEOUT, O_PUT, O_GET };
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "memory", required_argument, NULL, O_MEMORY },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "kernel", required_argument, NULL, O_KERNEL },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "put", required_argument, NULL, O_PUT },
		{ "get", required_argument, NULL, O_GET },
		{ "env", required_argument, NULL, 'e' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	const char *env[MAX_LIST + 1] = { 0 };
	struct {
		char *from, *to;
	} puts_[MAX_LIST], gets_[MAX_LIST];
	int nenv = 0, nput = 0, nget = 0;
	const char *workdir = NULL;
	unsigned long timeout_s = 0, v;
	bool interactive = false, tty = false;
	char *image = NULL;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "+e:w:ith", opts, NULL)) != -1) {
		switch (o) {
		case O_CPUS:
			if (parse_num(optarg, 64, &v) < 0 || v == 0) {
				fprintf(stderr, "cove run: --cpus must be 1 to 64, got '%s'\n",
				        optarg);
				return 2;
			}
			cfg.cpus = (unsigned)v;
			break;
		case O_MEMORY:
			if (parse_num(optarg, 1UL << 20, &v) < 0 || v < 64) {
				fprintf(stderr,
				        "cove run: --memory must be at least 64 (MiB), got '%s'\n",
				        optarg);
				return 2;
			}
			cfg.memory_mib = v;
			break;
		case O_IMAGE:
			free(image);
			image = cove_image_path(optarg);
			cfg.image = image;
			break;
		case O_KERNEL:
			cfg.kernel = optarg;
			break;
		case O_TIMEOUT:
			if (parse_num(optarg, 86400 * 365, &v) < 0 || v == 0) {
				fprintf(
				    stderr,
				    "cove run: --timeout must be a number of seconds, got '%s'\n",
				    optarg);
				return 2;
			}
			timeout_s = v;
			break;
		case O_PUT:
		case O_GET: {
			int *n = o == O_PUT ? &nput : &nget;
			char *a, *b;
			if (*n == MAX_LIST || split_pair(optarg, &a, &b) < 0) {
				fprintf(stderr, "cove run: --%s needs %s, got '%s'\n",
				        o == O_PUT ? "put" : "get",
				        o == O_PUT ? "LOCAL:GUEST" : "GUEST:LOCAL", optarg);
				return 2;
			}
			if (o == O_PUT) {
				puts_[nput].from = a;
				puts_[nput++].to = b;
			} else {
				gets_[nget].from = a;
				gets_[nget++].to = b;
			}
			break;
		}
		case 'e':
			if (nenv == MAX_LIST || !strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr, "cove run: -e needs K=V, got '%s'\n", optarg);
				return 2;
			}
			env[nenv++] = optarg;
			break;
		case 'w':
			workdir = optarg;
			break;
		case 'i':
			interactive = true;
			break;
		case 't':
			tty = true;
			break;
		case 'h':
			fputs(run_usage, stdout);
			return 0;
		default:
			fprintf(stderr, "cove run: unknown or incomplete option '%s'\n%s",
			        argv[optind - 1], run_usage);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "cove run: no command given\n%s", run_usage);
		return 2;
	}
	if (tty && !isatty(STDIN_FILENO)) {
		fprintf(stderr, "cove run: -t needs a terminal on standard input\n");
		return 2;
	}

	char err[512];
	struct cove_sandbox *sb = NULL;
	if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove run: %s\n", err);
		free(image);
		return 125;
	}
	int status = 125;
	for (int i = 0; i < nput; i++) {
		if (cove_put_file(sb, puts_[i].from, puts_[i].to, 0, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove run: --put %s:%s: %s\n", puts_[i].from, puts_[i].to,
			        err);
			goto out;
		}
	}

	struct sigaction sa = { .sa_handler = forward_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct termios saved;
	bool raw = false;
	struct cove_exec_opts eo = {
		.argv = (const char *const *)(argv + optind),
		.env = nenv ? env : NULL,
		.cwd = workdir,
		.timeout_ms = (uint32_t)(timeout_s * 1000),
		.pty = tty,
		.stdin_fd = interactive || !isatty(STDIN_FILENO) ? STDIN_FILENO : -1,
		.on_stdout = write_out,
		.on_stderr = write_stderr,
		.opaque = (void *)(intptr_t)STDOUT_FILENO,
		.pending_signal = &pending_signal,
	};
	if (tty) {
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
	struct cove_exec_result res;
	int r = cove_exec(sb, &eo, &res, err, sizeof(err));
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	if (r < 0) {
		fprintf(stderr, "cove run: %s\n", err);
		/* As shells do: 127 for a command not found, 126 for one that
		 * cannot run; 125 stays for failures of the sandbox itself. */
		status = r == -ENOENT ? 127 : r == -EACCES || r == -ENOEXEC ? 126 : 125;
		goto out;
	}
	status = res.timed_out ? 124 : res.signal ? 128 + res.signal : res.exit_code;
	if (res.timed_out)
		fprintf(stderr, "cove run: timed out after %lu s\n", timeout_s);
	for (int i = 0; i < nget; i++) {
		if (cove_get_file(sb, gets_[i].from, gets_[i].to, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove run: --get %s:%s: %s\n", gets_[i].from, gets_[i].to,
			        err);
			if (status == 0)
				status = 125;
		}
	}
out:
	cove_free(sb);
	free(image);
	return status;
}
