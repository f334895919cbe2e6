/* Option parsing shared by the commands: numbers, the sandbox's boot
 * configuration, names, and how a command runs in a sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/options.h"
#include "cove.h"
#include "cove_limits.h"
#include "lib/base/text.h"

int cli_parse_num(const char *s, unsigned long max, unsigned long *out)
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

int cli_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	unsigned int shift = 0;
	if (*end) {
		const char *units = "KMGT";
		const char *u = strchr(units, end[0] & ~0x20);
		if (!u || !end[0])
			return -1;
		shift = 10 * (unsigned int)(u - units + 1);
		end++;
		/* "16M", "16MB" and "16MiB" all mean 16 * 2^20. */
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
		if (*end)
			return -1;
	}
	if (v > (max >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_parse_duration(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	uint64_t mul = 1;
	if (*end) {
		mul = !strcmp(end, "s")   ? 1
		      : !strcmp(end, "m") ? 60
		      : !strcmp(end, "h") ? 3600
		      : !strcmp(end, "d") ? 86400
		                          : 0;
		if (!mul)
			return -1;
	}
	if (v > max / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* The limit options of cli_config_option. */
static int limit_option(struct cove_config *cfg, int o, const char *arg, const char *prog)
{
	uint64_t v;
	switch (o) {
	case CLI_O_CPU_QUOTA: {
		char *end;
		errno = 0;
		double q = strtod(arg, &end);
		if (errno || end == arg || *end || !(q >= 0.01 && q <= COVE_CPUS_MAX)) {
			fprintf(stderr, "%s: --cpu-quota must be 0.01 to %d CPUs, got '%s'\n", prog,
			        COVE_CPUS_MAX, arg);
			return -1;
		}
		cfg->cpu_quota = q;
		return 1;
	}
	case CLI_O_PIDS_MAX:
		if (cli_parse_size(arg, 4194304, &v) < 0 || v < 16 || strpbrk(arg, "KMGTkmgt")) {
			fprintf(stderr, "%s: --pids-max must be 16 to 4194304, got '%s'\n", prog,
			        arg);
			return -1;
		}
		cfg->pids_max = v;
		return 1;
	case CLI_O_DISK_SIZE:
		if (cli_parse_size(arg, 64ULL << 40, &v) < 0 || v == 0) {
			fprintf(stderr,
			        "%s: --disk-size must be a size like 2G (at most 64T), got '%s'\n",
			        prog, arg);
			return -1;
		}
		cfg->disk_size = v;
		return 1;
	case CLI_O_DISK_RATE:
		if (cli_parse_size(arg, 1ULL << 50, &v) < 0 || v < 4096) {
			fprintf(stderr,
			        "%s: --disk-rate must be bytes per second like 16M (at least 4K), "
			        "got '%s'\n",
			        prog, arg);
			return -1;
		}
		cfg->disk_bps = v;
		return 1;
	case CLI_O_DISK_IOPS:
		if (cli_parse_size(arg, 1ULL << 50, &v) < 0 || v == 0 || strpbrk(arg, "KMGTkmgt")) {
			fprintf(stderr,
			        "%s: --disk-iops must be a number of requests per second, "
			        "got '%s'\n",
			        prog, arg);
			return -1;
		}
		cfg->disk_iops = v;
		return 1;
	case CLI_O_TTL:
		if (cli_parse_duration(arg, 10ULL * 366 * 86400, &v) < 0 || v == 0) {
			fprintf(stderr,
			        "%s: --ttl must be a duration like 30s, 5m, 2h or a number of "
			        "seconds (at most 10 years), got '%s'\n",
			        prog, arg);
			return -1;
		}
		cfg->ttl_s = v;
		return 1;
	}
	return 0;
}

int cli_config_option(struct cove_config *cfg, char **image, int o, const char *arg,
                      const char *prog)
{
	unsigned long v;
	int k = limit_option(cfg, o, arg, prog);
	if (k)
		return k;
	switch (o) {
	case CLI_O_CPUS:
		if (cli_parse_num(arg, COVE_CPUS_MAX, &v) < 0 || v == 0) {
			fprintf(stderr, "%s: --cpus must be 1 to %d, got '%s'\n", prog,
			        COVE_CPUS_MAX, arg);
			return -1;
		}
		cfg->cpus = (unsigned)v;
		return 1;
	case CLI_O_MEMORY:
		if (cli_parse_num(arg, 1UL << 20, &v) < 0 || v < COVE_MEMORY_MIN_MIB) {
			fprintf(stderr, "%s: --memory must be at least %d MiB, got '%s'\n", prog,
			        COVE_MEMORY_MIN_MIB, arg);
			return -1;
		}
		cfg->memory_mib = v;
		return 1;
	case CLI_O_IMAGE:
		free(*image);
		*image = cove_image_path(arg);
		if (!*image) {
			fprintf(stderr, "%s: --image '%s': cannot resolve it\n", prog, arg);
			return -1;
		}
		cfg->image = *image;
		return 1;
	case CLI_O_KERNEL:
		cfg->kernel = arg;
		return 1;
	case CLI_O_HOSTNAME:
		if (!text_hostname_valid(arg)) {
			fprintf(stderr,
			        "%s: --hostname must be a host name (labels of letters, digits and "
			        "'-', 1 to 63 each, 253 in all), got '%s'\n",
			        prog, arg);
			return -1;
		}
		cfg->hostname = arg;
		return 1;
	}
	return 0;
}

int cli_check_name(const char *name, const char *prog)
{
	if (cove_name_valid(name))
		return 0;
	fprintf(stderr,
	        "%s: invalid sandbox name '%s': use 1 to %d of A-Z a-z 0-9 _ . -, "
	        "not starting with '.'\n",
	        prog, name ? name : "", COVE_NAME_MAX);
	return -1;
}

void cli_hostname_from_name(const char *name, char *out)
{
	size_t i = 0;
	for (; name[i] && i < COVE_NAME_MAX; i++)
		out[i] = name[i] == '_' ? '-' : name[i];
	out[i] = 0;
}

int cli_exec_option(struct cli_exec *x, int o, const char *arg, const char *prog)
{
	unsigned long v;
	switch (o) {
	case CLI_O_TIMEOUT:
		if (cli_parse_num(arg, 86400 * 365, &v) < 0 || v == 0) {
			fprintf(stderr, "%s: --timeout must be a number of seconds, got '%s'\n",
			        prog, arg);
			return -1;
		}
		x->timeout_s = v;
		return 1;
	case 'e':
		if (x->nenv == CLI_MAX_LIST || !strchr(arg, '=') || arg[0] == '=') {
			fprintf(stderr, "%s: -e needs K=V, got '%s'\n", prog, arg);
			return -1;
		}
		x->env[x->nenv++] = arg;
		return 1;
	case 'w':
		x->workdir = arg;
		return 1;
	case 'u':
		if (!cove_user_valid(arg)) {
			fprintf(stderr,
			        "%s: --user needs a user, uid, user:group or uid:gid, got '%s'\n",
			        prog, arg);
			return -1;
		}
		x->user = arg;
		return 1;
	case 'i':
		x->interactive = true;
		return 1;
	case 't':
		x->tty = true;
		return 1;
	}
	return 0;
}

int cli_exec_check(const struct cli_exec *x, const char *prog)
{
	if (x->tty && !isatty(STDIN_FILENO)) {
		fprintf(stderr, "%s: -t needs a terminal on standard input\n", prog);
		return -1;
	}
	return 0;
}
