/* Option parsing shared by the commands: numbers, the sandbox's boot
 * configuration, names, and how a command runs in a sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cove_limits.h"
#include "text.h"

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

int cli_config_option(struct cove_config *cfg, char **image, int o, const char *arg,
                      const char *prog)
{
	unsigned long v;
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
