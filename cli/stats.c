/* cove stats NAME [--json]: a running sandbox's CPU over one second, its
 * memory and its disk, read on the host (cove_usage). */
#include "cli/stats.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cove.h"

static const char usage[] = "usage: cove stats NAME [--json]\n"
                            "  CPU (of one CPU, over 1 s), memory and disk of a running sandbox,\n"
                            "  as the host sees them (docs/api.md \"Usage samples\")\n";

static void mib(char *out, size_t len, uint64_t b)
{
	snprintf(out, len, "%.1f MiB", (double)b / (1024.0 * 1024.0));
}

int cli_stats(int argc, char **argv)
{
	const char *name = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!name && argv[i][0] != '-')
			name = argv[i];
		else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!name) {
		fputs(usage, stderr);
		return 2;
	}
	char err[512];
	struct cove_sandbox *sb;
	if (cove_open(name, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove stats: %s\n", err);
		return 1;
	}
	struct cove_usage a, b;
	int64_t t0 = mono_ms();
	int r = cove_usage(sb, &a, err, sizeof(err));
	if (r == 0) {
		nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
		r = cove_usage(sb, &b, err, sizeof(err));
	}
	int64_t wall_us = (mono_ms() - t0) * 1000;
	cove_free(sb);
	if (r < 0) {
		fprintf(stderr, "cove stats: %s\n", err);
		return 1;
	}
	double cpu = wall_us > 0 && b.cpu_usec >= a.cpu_usec
	                 ? 100.0 * (double)(b.cpu_usec - a.cpu_usec) / (double)wall_us
	                 : 0;
	if (json) {
		printf("{\"cpu_pct\": %.2f, \"mem_bytes\": %llu, \"mem_cache_bytes\": %llu, "
		       "\"disk_used_bytes\": %llu, \"disk_total_bytes\": %llu}\n",
		       cpu, (unsigned long long)b.mem_bytes, (unsigned long long)b.mem_cache,
		       (unsigned long long)b.disk_used, (unsigned long long)b.disk_total);
		return 0;
	}
	char m[32], c[32], du[32], dt[32];
	mib(m, sizeof(m), b.mem_bytes);
	mib(c, sizeof(c), b.mem_cache);
	mib(du, sizeof(du), b.disk_used);
	mib(dt, sizeof(dt), b.disk_total);
	printf("cpu  %.2f%% (of one CPU)\nmem  %s (page cache %s)\ndisk %s of %s\n", cpu, m, c, du,
	       dt);
	return 0;
}
