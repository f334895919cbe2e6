/* cove ls: the sandboxes of the runtime directory, as a table or JSON.
 * Entries whose cove-vmm died are removed, reported on stderr and listed
 * once as dead. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/ls.h"
#include "cove.h"

static const char ls_usage[] = "usage: cove ls [--json]\n";

static void format_age(int64_t created, int64_t now, char *out, size_t len)
{
	int64_t s = now - created;
	if (!created || s < 0)
		snprintf(out, len, "-");
	else if (s < 60)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, len, "%lldm", (long long)(s / 60));
	else if (s < 86400)
		snprintf(out, len, "%lldh", (long long)(s / 3600));
	else
		snprintf(out, len, "%lldd", (long long)(s / 86400));
}

/* A byte count the way the flags take it: 256M, 2G, 1536K. */
static void format_size(uint64_t v, char *out, size_t len)
{
	static const char units[] = "BKMGT";
	unsigned int u = 0;
	while (u < 4 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%llu", (unsigned long long)v);
	else
		snprintf(out, len, "%llu%c", (unsigned long long)v, units[u]);
}

/* "cpu=0.5 pids=64 rate=16M/s iops=100" or "-". */
static void format_limits(const struct cove_info *s, char *out, size_t len)
{
	size_t n = 0;
	char v[32];
	out[0] = 0;
	if (s->cpu_quota > 0)
		n += (size_t)snprintf(out + n, len - n, "%scpu=%g", n ? " " : "", s->cpu_quota);
	if (s->pids_max && n < len)
		n += (size_t)snprintf(out + n, len - n, "%spids=%llu", n ? " " : "",
		                      (unsigned long long)s->pids_max);
	if (s->disk_bps && n < len) {
		format_size(s->disk_bps, v, sizeof(v));
		n += (size_t)snprintf(out + n, len - n, "%srate=%s/s", n ? " " : "", v);
	}
	if (s->disk_iops && n < len)
		n += (size_t)snprintf(out + n, len - n, "%siops=%llu", n ? " " : "",
		                      (unsigned long long)s->disk_iops);
	/* Its network: the policy's mode and the host link. */
	json_t *p = s->net_policy ? json_loads(s->net_policy, 0, NULL) : NULL;
	if (s->net_policy && n < len)
		n += (size_t)snprintf(
		    out + n, len - n, "%snet=%s(cv%u)", n ? " " : "",
		    p ? json_string_value(json_object_get(p, "mode")) ?: "?" : "?", s->net_index);
	json_decref(p);
	if (!out[0])
		snprintf(out, len, "-");
}

static void print_table(const struct cove_info *list, size_t n, int64_t now)
{
	int w = 4, lw = 6;
	char limits[160];
	for (size_t i = 0; i < n; i++) {
		if ((int)strlen(list[i].name) > w)
			w = (int)strlen(list[i].name);
		format_limits(&list[i], limits, sizeof(limits));
		if ((int)strlen(limits) > lw)
			lw = (int)strlen(limits);
	}
	printf("%-*s  %-8s  %7s  %4s  %7s  %-7s  %6s  %-9s  %-*s  %s\n", w, "NAME", "STATE", "PID",
	       "CPUS", "MEMORY", "AGE", "DISK", "TTL", lw, "LIMITS", "IMAGE or RESTORED-FROM");
	for (size_t i = 0; i < n; i++) {
		const struct cove_info *s = &list[i];
		char age[32], mem[32], pid[16], cpus[16], disk[32], ttl[72], left[32];
		format_age(s->created, now, age, sizeof(age));
		format_limits(s, limits, sizeof(limits));
		if (s->disk_size)
			format_size(s->disk_size, disk, sizeof(disk));
		else
			snprintf(disk, sizeof(disk), "-");
		/* The ttl and what is left of it ("5m/3m" left). */
		if (s->ttl_s && s->created) {
			int64_t rest = s->created + (int64_t)s->ttl_s - now;
			format_age(now - (rest > 0 ? rest : 0), now, left, sizeof(left));
			char total[32];
			format_age(now - (int64_t)s->ttl_s, now, total, sizeof(total));
			snprintf(ttl, sizeof(ttl), "%s/%s", total, left);
		} else {
			snprintf(ttl, sizeof(ttl), s->ttl_s ? "%llus" : "-",
			         (unsigned long long)s->ttl_s);
		}
		snprintf(mem, sizeof(mem), s->memory_mib ? "%lluM" : "-",
		         (unsigned long long)s->memory_mib);
		snprintf(pid, sizeof(pid), s->pid ? "%d" : "-", (int)s->pid);
		snprintf(cpus, sizeof(cpus), s->cpus ? "%u" : "-", s->cpus);
		printf("%-*s  %-8s  %7s  %4s  %7s  %-7s  %6s  %-9s  %-*s  %s%s\n", w, s->name,
		       cove_state_name(s->state), pid, cpus, mem, age, disk, ttl, lw, limits,
		       s->restored_from ? "restored from " : "",
		       s->restored_from ? s->restored_from
		       : s->image       ? s->image
		                        : "-");
	}
}

static int print_json(const struct cove_info *list, size_t n, int64_t now)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		const struct cove_info *s = &list[i];
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "name", s->name,
		                      "state", cove_state_name(s->state), "pid", (json_int_t)s->pid,
		                      "cpus", (json_int_t)s->cpus, "memory_mib",
		                      (json_int_t)s->memory_mib, "created", (json_int_t)s->created,
		                      "age_s", (json_int_t)(s->created ? now - s->created : 0));
		if (o && s->image)
			json_object_set_new(o, "image", json_string(s->image));
		if (o) {
			json_object_set_new(o, "cpu_quota", json_real(s->cpu_quota));
			json_object_set_new(o, "pids_max", json_integer((json_int_t)s->pids_max));
			json_object_set_new(o, "disk_size", json_integer((json_int_t)s->disk_size));
			json_object_set_new(o, "disk_bps", json_integer((json_int_t)s->disk_bps));
			json_object_set_new(o, "disk_iops", json_integer((json_int_t)s->disk_iops));
			json_object_set_new(o, "ttl_s", json_integer((json_int_t)s->ttl_s));
		}
		if (o && s->restored_from)
			json_object_set_new(o, "restored_from", json_string(s->restored_from));
		json_t *policy = o && s->net_policy ? json_loads(s->net_policy, 0, NULL) : NULL;
		if (policy) {
			char link[24];
			snprintf(link, sizeof(link), "cv%u", s->net_index);
			json_object_set_new(o, "net",
			                    json_pack("{s:o, s:i, s:s}", "policy", policy, "index",
			                              (int)s->net_index, "link", link));
		}
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	char *text = a ? json_dumps(a, JSON_INDENT(2)) : NULL;
	json_decref(a);
	if (!text) {
		fprintf(stderr, "cove ls: out of memory\n");
		return 1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

int cli_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool json = false;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 'j') {
			json = true;
		} else if (o == 'h') {
			fputs(ls_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "cove ls: unknown option '%s'\n%s", argv[optind - 1],
			        ls_usage);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cove ls: unexpected argument '%s'\n%s", argv[optind], ls_usage);
		return 2;
	}
	char err[512];
	struct cove_info *list;
	size_t n;
	if (cove_list(&list, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove ls: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		if (list[i].state == COVE_STATE_DEAD)
			fprintf(stderr,
			        "cove ls: sandbox %s was dead (its process %d is gone); "
			        "removed its entry\n",
			        list[i].name, (int)list[i].pid);
	int64_t now = (int64_t)time(NULL);
	int status = 0;
	if (json)
		status = print_json(list, n, now);
	else
		print_table(list, n, now);
	cove_list_free(list, n);
	return status;
}
