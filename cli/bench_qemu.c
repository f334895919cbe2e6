/* cove bench boot --vs qemu: after each Cove cold start, one QEMU microvm
 * boot of the same kernel, image and memory, with the image's /init
 * running `true` (cove.cmd).  The phases QEMU lets us see from outside are
 * the console's COVE-INIT-OK (guest_init), COVE-CMD-EXIT (first_exec) and
 * its exit (teardown); each pair (A B A B) also gets its Cove/QEMU ratio. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench_qemu.h"
#include "cli/bench_report.h"
#include "clock.h"
#include "cove_limits.h"
#include "errf.h"
#include "qcow2_create.h"

/* QEMU's KVM counters, read from the host's debugfs while its VM still
 * exists (/sys/kernel/debug/kvm/<pid>-<fd>/, summed over its vCPUs): the
 * same names as Cove's work counts.  Needs debugfs mounted and root. */
static json_t *qemu_kvm_work(pid_t pid)
{
	static const char *const keys[] = { "exits",        "io_exits",        "mmio_exits",
		                            "halt_exits",   "irq_exits",       "irq_window_exits",
		                            "pf_taken",     "pf_fixed",        "insn_emulation",
		                            "signal_exits", "nmi_window_exits" };
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
	DIR *d = opendir("/sys/kernel/debug/kvm");
	struct dirent *e = NULL;
	while (d && (e = readdir(d)) && strncmp(e->d_name, prefix, strlen(prefix)))
		;
	json_t *w = json_object();
	if (!e) {
		json_object_set_new(w, "unavailable",
		                    json_string("no /sys/kernel/debug/kvm/<pid>-* (debugfs not "
		                                "mounted, or not root)"));
	} else {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			char path[320], buf[32];
			snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%s/%s", e->d_name,
			         keys[i]);
			FILE *f = fopen(path, "re");
			if (f && fgets(buf, sizeof(buf), f))
				json_object_set_new(w, keys[i], json_integer(atoll(buf)));
			if (f)
				fclose(f);
		}
	}
	if (d)
		closedir(d);
	return w;
}

int bench_qemu_sample(const struct cove_config *cfg, double *ph, json_t **work, char *err,
                      size_t errlen)
{
	*work = NULL;
	for (int p = 0; p < PH_COUNT; p++)
		ph[p] = NAN;
	char dir[] = "/tmp/cove-bench-qemu-XXXXXX", overlay[64], drive[128], mem[32], smp[16];
	if (!mkdtemp(dir))
		return errf(err, errlen, -1, "mkdtemp: %s", strerror(errno));
	snprintf(overlay, sizeof(overlay), "%s/root.qcow2", dir);
	if (qcow2_create_overlay(overlay, cfg->image, 0, err, errlen) < 0) {
		rmdir(dir);
		return -1;
	}
	snprintf(drive, sizeof(drive), "id=root,file=%s,format=qcow2,if=none", overlay);
	uint64_t mib = cfg->memory_mib ? cfg->memory_mib : COVE_MEMORY_DEFAULT_MIB;
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)mib);
	snprintf(smp, sizeof(smp), "%u", cfg->cpus ? cfg->cpus : COVE_CPUS_DEFAULT);
	const char *argv[] = { "qemu-system-x86_64",
		               "-M",
		               "microvm,acpi=off,rtc=off,x-option-roms=off,isa-serial=on",
		               "-accel",
		               "kvm",
		               "-cpu",
		               "host",
		               "-m",
		               mem,
		               "-smp",
		               smp,
		               "-nodefaults",
		               "-no-user-config",
		               "-nographic",
		               "-no-reboot",
		               "-serial",
		               "stdio",
		               "-device",
		               "i8042",
		               "-kernel",
		               cfg->kernel,
		               "-append",
		               "console=ttyS0 reboot=k panic=1 root=/dev/vda rw quiet init=/init "
		               "cove.cmd=dHJ1ZQ==",
		               "-drive",
		               drive,
		               "-device",
		               "virtio-blk-device,drive=root",
		               NULL };
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return errf(err, errlen, -1, "pipe: %s", strerror(errno));
	double t0 = mono_ns() / 1e6;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		execvp(argv[0], (char *const *)argv);
		dprintf(1, "cannot run qemu-system-x86_64: %s\n", strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	char line[4096];
	size_t len = 0;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		if (poll(&p, 1, 120000) <= 0)
			break;
		ssize_t n = read(pfd[0], line + len, sizeof(line) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		line[len] = '\0';
		double t = mono_ns() / 1e6 - t0;
		if (isnan(ph[PH_GUEST_INIT]) && strstr(line, "COVE-INIT-OK"))
			ph[PH_GUEST_INIT] = t;
		if (isnan(ph[PH_FIRST_EXEC]) && strstr(line, "COVE-CMD-EXIT")) {
			ph[PH_FIRST_EXEC] = t;
			if (!*work)
				*work = qemu_kvm_work(pid); /* its VM ends with the guest */
		}
		/* Keep the tail so a marker split across reads is still seen. */
		char *nl = strrchr(line, '\n');
		if (nl) {
			len = strlen(nl + 1);
			memmove(line, nl + 1, len + 1);
		} else if (len > sizeof(line) / 2) {
			memmove(line, line + len - 64, 65);
			len = 64;
		}
	}
	close(pfd[0]);
	int status;
	if (pid > 0) {
		kill(pid, SIGKILL); /* a no-op once it has ended */
		waitpid(pid, &status, 0);
	}
	ph[PH_TEARDOWN] = mono_ns() / 1e6 - t0;
	unlink(overlay);
	rmdir(dir);
	if (pid < 0 || isnan(ph[PH_FIRST_EXEC]))
		return errf(err, errlen, -1,
		            "QEMU microvm did not run the command (is qemu-system-x86 "
		            "installed, and /dev/kvm usable?)");
	return 0;
}

void bench_qemu_add_sample(json_t *samples, const double *ph, const double *qph, json_t *work)
{
	json_t *ratio = json_object();
	for (int p = 0; p < PH_COUNT; p++)
		if (!isnan(qph[p]) && !isnan(ph[p]) && qph[p] > 0)
			json_object_set_new(ratio, bench_phase_names[p], json_real(ph[p] / qph[p]));
	json_array_append_new(samples, json_pack("{s:s, s:o, s:o, s:o}", "system", "qemu", "phases",
	                                         bench_phases_json(qph), "ratio_cove_qemu", ratio,
	                                         "work", work ? work : json_object()));
}

void bench_qemu_report(double (*ph)[PH_COUNT], double (*qph)[PH_COUNT], int n)
{
	bench_header("qemu microvm (same kernel, image, memory; A B A B)", n);
	for (int p = 0; p < PH_COUNT; p++) {
		double *col = malloc(sizeof(double) * (size_t)n);
		for (int i = 0; i < n; i++)
			col[i] = qph[i][p];
		bench_row(bench_phase_names[p], col, n);
		free(col);
	}
	bench_header("ratio cove/qemu per pair", n);
	for (int p = 0; p < PH_COUNT; p++) {
		double *col = malloc(sizeof(double) * (size_t)n);
		for (int i = 0; i < n; i++)
			col[i] = isnan(qph[i][p]) || isnan(ph[i][p]) ? NAN : ph[i][p] / qph[i][p];
		bench_row(bench_phase_names[p], col, n);
		free(col);
	}
}
