/* One sample's measurements from cove-vmm and /proc: its phases and its
 * work counts (KVM exits, disk bytes, memory, page faults). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_report.h"
#include "cli/bench_sample.h"
#include "cove.h"
#include "errf.h"

/* Work counts reported per sample (of KVM's counters, the telling ones). */
static const char *const kvm_counters[] = { "exits",      "io_exits",  "mmio_exits",
	                                    "halt_exits", "irq_exits", "pf_taken" };

int bench_exec_true(struct cove_sandbox *sb, char *err, size_t errlen)
{
	const char *argv[] = { "true", NULL };
	struct cove_exec_opts o = { .argv = argv, .stdin_fd = -1 };
	struct cove_exec_result res;
	int r = cove_exec(sb, &o, &res, err, errlen);
	if (r == 0 && res.exit_code != 0)
		r = errf(err, errlen, -EIO, "true exited %d", res.exit_code);
	return r;
}

/* Fields 10 and 12 of /proc/PID/stat, after the command name's ')'. */
static int proc_faults(pid_t pid, long *minflt, long *majflt)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	long v[12];
	if (!p || sscanf(p + 2, "%*c %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2],
	                 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) != 10)
		return -1;
	*minflt = v[6]; /* field 10: ppid(4) pgrp sid tty tpgid flags minflt */
	*majflt = v[8];
	return 0;
}

/* Fills the VMM's phases (relative to t0) and the work counts. */
json_t *bench_vmm_sample(struct cove_sandbox *sb, double t0, double *ph)
{
	char *text = NULL, err[256];
	if (cove_vmm_stats(sb, &text, err, sizeof(err)) < 0)
		return json_object();
	json_t *s = json_loads(text, 0, NULL);
	free(text);
	json_t *t = json_object_get(s, "times");
	double start = json_integer_value(json_object_get(t, "process_start_mono_us")) / 1e3 - t0;
	ph[PH_VMM_START] = start;
	static const char *const keys[] = { "vm_created_us", "first_kvm_run_us", "guest_init_us" };
	static const enum phase which[] = { PH_VM_CREATED, PH_FIRST_RUN, PH_GUEST_INIT };
	for (int i = 0; i < 3; i++) {
		json_int_t us = json_integer_value(json_object_get(t, keys[i]));
		ph[which[i]] = us > 0 ? start + us / 1e3 : NAN;
	}
	json_t *work = json_object();
	json_t *kvm = json_object_get(s, "kvm");
	for (size_t i = 0; i < sizeof(kvm_counters) / sizeof(kvm_counters[0]); i++) {
		json_t *v = json_object_get(kvm, kvm_counters[i]);
		if (v)
			json_object_set(work, kvm_counters[i], v);
	}
	static const char *const more[] = { "disk_read_bytes", "vmm_rss_kb", "guest_rss_kb" };
	for (size_t i = 0; i < 3; i++)
		json_object_set(work, more[i], json_object_get(s, more[i]));
	/* Every exit reason KVM counts that happened ("*_exits"), the other
	 * non-zero counters beside them, and the PIO/MMIO exits by address. */
	json_t *reasons = json_object(), *other = json_object();
	const char *key;
	json_t *v;
	json_object_foreach(kvm, key, v)
	{
		if (!json_integer_value(v))
			continue;
		size_t kl = strlen(key);
		bool exit_reason = kl > 6 && !strcmp(key + kl - 6, "_exits");
		json_object_set(exit_reason ? reasons : other, key, v);
	}
	json_object_set_new(work, "exits_by_reason", reasons);
	json_object_set_new(work, "kvm_other", other);
	json_t *addrs = json_object_get(s, "exit_addrs");
	if (addrs)
		json_object_set(work, "exit_addrs", addrs);
	json_t *pf = json_object_get(s, "prefetch");
	if (pf)
		json_object_set(work, "prefetch", pf);
	/* cove-vmm's own page faults (guest RAM is its memory): minor, major. */
	long minflt, majflt;
	if (proc_faults(cove_vmm_pid(sb), &minflt, &majflt) == 0) {
		json_object_set_new(work, "host_minflt", json_integer(minflt));
		json_object_set_new(work, "host_majflt", json_integer(majflt));
	}
	json_decref(s);
	return work;
}
