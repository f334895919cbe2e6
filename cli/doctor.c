/* cove doctor: can sandboxes run on this machine, and how?  One line per
 * check (ok, warn or fail), then a verdict: sandboxes run directly, through
 * the emulated host (scripts/kvm-host), or cannot run, and why.  --json
 * gives the same report as one JSON object.  Exit status 0 when sandboxes
 * can run (either way), 1 when they cannot, 2 on bad usage. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <linux/kvm.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/doctor.h"
#include "clock.h"
#include "cove.h"
#include "kvm_caps.h"
#include "lib/vmm/kvm_probe.h"

static const char doctor_usage[] =
    "usage: cove doctor [--json]\n"
    "\n"
    "Checks /dev/kvm (backend, access, capabilities, a test guest),\n"
    "the emulated host, cgroup v2, /dev/net/tun, vhost, user\n"
    "namespaces and the guest kernel and image, then says whether\n"
    "sandboxes run directly, through the emulated host, or not.\n";

enum level { OK, WARN, FAIL };
static const char *const level_names[] = { "ok", "warn", "fail" };

#define MAX_CHECKS 24

struct check {
	const char *name;
	enum level level;
	char detail[400];
};

struct report {
	struct check c[MAX_CHECKS];
	size_t n;
};

__attribute__((format(printf, 4, 5))) static void add(struct report *r, const char *name,
                                                      enum level l, const char *fmt, ...)
{
	if (r->n >= MAX_CHECKS)
		return;
	struct check *c = &r->c[r->n++];
	c->name = name;
	c->level = l;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

static bool read_line(const char *path, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(out, (int)len, f) != NULL;
	fclose(f);
	out[strcspn(out, "\n")] = 0;
	return ok;
}

static void owner_names(const struct stat *st, char *out, size_t len)
{
	struct passwd *pw = getpwuid(st->st_uid);
	struct group *gr = getgrgid(st->st_gid);
	char u[32], g[32];
	snprintf(u, sizeof(u), "%s", pw ? pw->pw_name : "?");
	snprintf(g, sizeof(g), "%s", gr ? gr->gr_name : "?");
	snprintf(out, len, "%s:%s mode %03o", u, g, st->st_mode & 0777);
}

static void check_kvm(struct report *r, const struct kvm_probe *p)
{
	struct stat st;
	if (stat("/dev/kvm", &st) < 0) {
		add(r, "kvm device", WARN, "no /dev/kvm (%s)", strerror(errno));
	} else {
		char own[96];
		owner_names(&st, own, sizeof(own));
		bool rw = access("/dev/kvm", R_OK | W_OK) == 0;
		add(r, "kvm device", rw ? OK : WARN, "/dev/kvm %s, %s", own,
		    rw ? "read-write for this user"
		       : "not usable by this user (add it to that group, or run as root)");
	}

	const char *vendor = p->vendor[0] ? p->vendor : "no VMX/SVM in CPU flags";
	switch (p->backend) {
	case KVM_BACKEND_HW:
		add(r, "kvm backend", OK, "hardware (%s, kvm_%s)", vendor,
		    strcmp(p->vendor, "svm") ? "intel" : "amd");
		break;
	case KVM_BACKEND_NESTED:
		add(r, "kvm backend", OK, "nested (%s inside a VM)", vendor);
		break;
	case KVM_BACKEND_PVM:
		add(r, "kvm backend", WARN,
		    "PVM (kvm_pvm): a software KVM that runs only PVM guest kernels (%s)", vendor);
		break;
	case KVM_BACKEND_UNKNOWN:
		add(r, "kvm backend", WARN, "unknown (kvm is loaded, no vendor module; %s)",
		    vendor);
		break;
	case KVM_BACKEND_NONE:
		add(r, "kvm backend", WARN, "absent (no KVM module loaded; %s)", vendor);
		break;
	}

	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		add(r, "kvm capabilities", WARN, "not checked: cannot open /dev/kvm (%s)",
		    strerror(errno));
	} else {
		char missing[256] = "", opt[256] = "";
		size_t nm = 0, no = 0;
		for (size_t i = 0; i < KVM_REQUIRED_CAPS_N; i++)
			if (ioctl(fd, KVM_CHECK_EXTENSION, kvm_required_caps[i].cap) <= 0)
				snprintf(missing + strlen(missing),
				         sizeof(missing) - strlen(missing), "%s%s", nm++ ? " " : "",
				         kvm_required_caps[i].name);
		for (size_t i = 0; i < KVM_OPTIONAL_CAPS_N; i++)
			if (ioctl(fd, KVM_CHECK_EXTENSION, kvm_optional_caps[i].cap) <= 0)
				snprintf(opt + strlen(opt), sizeof(opt) - strlen(opt), "%s%s",
				         no++ ? " " : "", kvm_optional_caps[i].name);
		int api = ioctl(fd, KVM_GET_API_VERSION, 0);
		close(fd);
		if (nm)
			add(r, "kvm capabilities", FAIL, "API %d; missing what cove-vmm needs: %s",
			    api, missing);
		else
			add(r, "kvm capabilities", no ? WARN : OK, "API %d; all %zu required%s%s",
			    api, KVM_REQUIRED_CAPS_N,
			    no ? ", optional missing: " : ", all optional too", opt);
	}

	if (p->status == KVM_PROBE_WORKS)
		add(r, "kvm test guest", OK,
		    "a 64-bit test guest ran (cmpxchg16b, xsave/xrstor, Cove's MSRs)");
	else if (p->status == KVM_PROBE_ABSENT || p->status == KVM_PROBE_NO_ACCESS)
		add(r, "kvm test guest", WARN, "not run: %s", p->detail);
	else
		add(r, "kvm test guest", WARN, "failed: %s", p->detail);
}

/* Whether qemu-system-x86_64 offers an EPYC model (SVM emulation under
 * TCG): the emulated host needs it.  `qemu -cpu help` runs with a 10 s
 * deadline. */
static bool qemu_has_epyc(const char *qemu)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return false;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(null, 2);
		execl(qemu, qemu, "-cpu", "help", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* The last 3 bytes stay in front, so a match across two reads counts. */
	char win[3 + 4096 + 1];
	size_t keep = 0;
	bool found = false;
	int64_t deadline = mono_ms() + 10000;
	while (!found) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int64_t left = deadline - mono_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		ssize_t n = read(fds[0], win + keep, sizeof(win) - keep - 1);
		if (n <= 0)
			break;
		size_t total = keep + (size_t)n;
		win[total] = 0;
		found = strstr(win, "EPYC") != NULL;
		keep = total < 3 ? total : 3;
		memmove(win, win + total - keep, keep);
	}
	close(fds[0]);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return found;
}

/* coved's line: `coved --check` (beside this cove, or $COVED) reads
 * coved's config ($COVED_CONFIG, else coved's default) and keys file with
 * coved's own loaders and prints the tenant count and the TCP listener;
 * within 10 s.  A plain-HTTP listener is worth a warning: keys and access
 * tokens cross it in cleartext. */
static void check_coved(struct report *r)
{
	static char *beside;
	const char *coved = getenv("COVED");
	if (!coved || !*coved) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		char *slash = n > 0 ? (exe[n] = 0, strrchr(exe, '/')) : NULL;
		if (slash && !beside) {
			*slash = 0;
			if (asprintf(&beside, "%s/coved", exe) < 0)
				beside = NULL;
		}
		coved = beside;
	}
	if (!coved || access(coved, X_OK) < 0) {
		add(r, "coved", WARN, "%s missing (run make)", coved ? coved : "coved");
		return;
	}
	const char *config = getenv("COVED_CONFIG");
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		add(r, "coved", WARN, "cannot tell: pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		if (config && *config)
			execl(coved, coved, "--config", config, "--check", (char *)NULL);
		else
			execl(coved, coved, "--check", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char out[512];
	size_t len = 0;
	int64_t deadline = mono_ms() + 10000;
	while (pid > 0 && len < sizeof(out) - 1) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int64_t left = deadline - mono_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		ssize_t n = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fds[0]);
	out[len] = 0;
	out[strcspn(out, "\n")] = 0;
	int st = -1;
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		add(r, "coved", WARN, "cannot tell: %s", *out ? out : "coved --check failed");
	else
		add(r, "coved", strstr(out, "plain HTTP") ? WARN : OK, "%s", out);
}

static bool check_emulator(struct report *r)
{
	char qemu[4096];
	if (!kvm_emulator_find(qemu, sizeof(qemu))) {
		add(r, "emulated host", WARN,
		    "unavailable: qemu-system-x86_64 is not installed (scripts/install-deps)");
		return false;
	}
	if (!qemu_has_epyc(qemu)) {
		add(r, "emulated host", WARN, "unavailable: %s offers no EPYC CPU model (SVM)",
		    qemu);
		return false;
	}
	add(r, "emulated host", OK, "%s with SVM emulation (EPYC)", qemu);
	return true;
}

/* Where cgroup2 is mounted (first in /proc/mounts), and the cgroup v1
 * controllers mounted beside it (a hybrid host). */
static bool find_cgroup2(char *mnt, size_t len, char *v1, size_t v1len)
{
	mnt[0] = v1[0] = 0;
	FILE *f = fopen("/proc/mounts", "re");
	if (!f)
		return false;
	char dev[256], dir[512], type[64], opts[512];
	while (fscanf(f, "%255s %511s %63s %511s %*d %*d", dev, dir, type, opts) == 4) {
		if (!strcmp(type, "cgroup2") && !mnt[0])
			snprintf(mnt, len, "%s", dir);
		else if (!strcmp(type, "cgroup") && strrchr(dir, '/'))
			snprintf(v1 + strlen(v1), v1len - strlen(v1), "%s%s", v1[0] ? " " : "",
			         strrchr(dir, '/') + 1);
	}
	fclose(f);
	return mnt[0] != 0;
}

static void check_cgroup(struct report *r)
{
	char mnt[512], v1[256], path[600], ctl[512] = "", sub[512] = "";
	if (!find_cgroup2(mnt, sizeof(mnt), v1, sizeof(v1))) {
		add(r, "cgroup v2", WARN, "not mounted%s%s: no host-enforced limits",
		    v1[0] ? "; cgroup v1 only: " : "", v1);
		return;
	}
	snprintf(path, sizeof(path), "%s/cgroup.controllers", mnt);
	read_line(path, ctl, sizeof(ctl));
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mnt);
	read_line(path, sub, sizeof(sub));
	char missing[128] = "";
	static const char *const want[] = { "cpu", "memory", "io", "pids" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char pad[520], w[16];
		snprintf(pad, sizeof(pad), " %s ", sub);
		snprintf(w, sizeof(w), " %s ", want[i]);
		if (!strstr(pad, w))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
			         " %s", want[i]);
	}
	add(r, "cgroup v2", missing[0] ? WARN : OK, "%s: controllers: %s; delegated: %s%s%s%s%s",
	    mnt, ctl[0] ? ctl : "none", sub[0] ? sub : "none", missing[0] ? "; not delegated:" : "",
	    missing, v1[0] ? "; cgroup v1 holds: " : "", v1);
}

static void check_node(struct report *r, const char *name, const char *path, const char *use)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
		add(r, name, WARN, "%s missing (%s)", path, use);
	else if (access(path, R_OK | W_OK) < 0)
		add(r, name, WARN, "%s not usable by this user (%s)", path, use);
	else
		add(r, name, OK, "%s", path);
}

static void check_userns(struct report *r)
{
	char clone[32] = "", max[32] = "";
	bool has_clone =
	    read_line("/proc/sys/kernel/unprivileged_userns_clone", clone, sizeof(clone));
	read_line("/proc/sys/user/max_user_namespaces", max, sizeof(max));
	if ((has_clone && strcmp(clone, "1")) || !strcmp(max, "0"))
		add(r, "user namespaces", WARN, "unprivileged user namespaces are off (%s%s)",
		    has_clone ? "kernel.unprivileged_userns_clone=" : "user.max_user_namespaces=",
		    has_clone && strcmp(clone, "1") ? clone : max);
	else
		add(r, "user namespaces", OK, "unprivileged user namespaces allowed (max %s)",
		    max[0] ? max : "?");
}

static void check_file(struct report *r, const char *name, const char *path, const char *fix)
{
	struct stat st;
	if (!path || stat(path, &st) < 0)
		add(r, name, FAIL, "%s missing (%s)", path ? path : "(none)", fix);
	else
		add(r, name, OK, "%s (%.1f MiB)", path, (double)st.st_size / (1024.0 * 1024.0));
}

/* Entries of Cove's cache folder sub (~/.cache/cove/SUB, as the scripts
 * that fill it find it); -1 when it does not exist. */
static int cache_entries(const char *env, const char *sub, char *dir, size_t len)
{
	const char *base = getenv(env), *home = getenv("HOME");
	if (base && *base)
		snprintf(dir, len, "%s%s/%s", base, strcmp(env, "COVE_CACHE") ? "/cove" : "", sub);
	else
		snprintf(dir, len, "%s/.cache/cove/%s", home ? home : "/root", sub);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') /* ".", "..", and builds in progress (.tmp.*) */
			n++;
	closedir(d);
	return n;
}

static void check_caches(struct report *r)
{
	char dir[4096];
	int n = cache_entries("XDG_CACHE_HOME", "kernel", dir, sizeof(dir));
	if (n <= 0)
		add(r, "kernel cache", WARN, "%s is empty: the first make builds the guest kernel",
		    dir);
	else
		add(r, "kernel cache", OK, "%s: %d build%s", dir, n, n == 1 ? "" : "s");
	n = cache_entries("COVE_CACHE", "kvm-host", dir, sizeof(dir));
	add(r, "emulated host cache", n > 0 ? OK : WARN, "%s%s", dir,
	    n > 0 ? ": kernel and initramfs ready" : " is empty: prepared on first use");
}

static int print_json(const struct report *r, const char *verdict, const char *text,
                      const struct kvm_probe *p)
{
	json_t *checks = json_array();
	for (size_t i = 0; i < r->n; i++)
		json_array_append_new(checks, json_pack("{s:s, s:s, s:s}", "name", r->c[i].name,
		                                        "status", level_names[r->c[i].level],
		                                        "detail", r->c[i].detail));
	json_t *o = json_pack("{s:o, s:s, s:s, s:{s:s, s:s, s:s}}", "checks", checks, "verdict",
	                      verdict, "verdict_text", text, "kvm", "backend",
	                      kvm_backend_name(p->backend), "vendor", p->vendor, "probe",
	                      p->status == KVM_PROBE_WORKS ? "works" : p->detail);
	if (!o)
		return -1;
	char *s = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (!s)
		return -1;
	puts(s);
	free(s);
	return 0;
}

int cli_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	bool json = false;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 'j') {
			json = true;
		} else if (o == 'h') {
			fputs(doctor_usage, stdout);
			return 0;
		} else {
			fputs(doctor_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cove doctor: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	struct report r = { .n = 0 };
	struct kvm_probe p;
	kvm_probe_run("/dev/kvm", 10, &p);
	check_kvm(&r, &p);
	bool emulator = check_emulator(&r);
	check_cgroup(&r);
	check_node(&r, "tun", "/dev/net/tun", "needed for sandbox networking");
	check_node(&r, "vhost-net", "/dev/vhost-net", "optional: faster virtio-net");
	check_node(&r, "vhost-vsock", "/dev/vhost-vsock", "optional");
	check_userns(&r);
	char conf[320];
	int cr = cove_confinement(conf, sizeof(conf));
	add(&r, "confinement", cr == 0 ? OK : cr > 0 ? WARN : FAIL, "%s", conf);
	char net[400];
	int nr = cove_net_probe(net, sizeof(net));
	add(&r, "network", nr == 0 ? OK : WARN, "%s", net);
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	check_file(&r, "cove-vmm", cfg.vmm, "run make");
	check_file(&r, "guest kernel", cfg.kernel, "run make");
	check_file(&r, "guest image", cfg.image, "run make");
	struct stat est;
	if (!cfg.egress || stat(cfg.egress, &est) < 0)
		add(&r, "cove-egress", WARN, "%s missing (needed for sandbox networking; run make)",
		    cfg.egress ? cfg.egress : "(none)");
	else
		add(&r, "cove-egress", OK, "%s", cfg.egress);
	check_caches(&r);
	check_coved(&r);

	bool files_ok = true;
	for (size_t i = 0; i < r.n; i++)
		if (r.c[i].level == FAIL && strcmp(r.c[i].name, "kvm capabilities"))
			files_ok = false;
	char why[512], text[640];
	enum kvm_route route = kvm_route_decide(&p, emulator, why, sizeof(why));
	const char *verdict;
	if (!files_ok) {
		verdict = "none";
		snprintf(text, sizeof(text), "cannot run: Cove is not built here (run make)");
	} else if (route == KVM_ROUTE_DIRECT) {
		verdict = "direct";
		snprintf(text, sizeof(text), "sandboxes run directly");
	} else if (route == KVM_ROUTE_EMULATED) {
		verdict = "emulated";
		char *tail = strstr(why, "; using the emulated host");
		if (tail)
			*tail = 0;
		snprintf(text, sizeof(text),
		         "sandboxes run through the emulated host (prefix commands with "
		         "scripts/kvm-host --), because %s",
		         why);
	} else {
		verdict = "none";
		snprintf(text, sizeof(text), "cannot run: %s", why);
	}

	if (json) {
		if (print_json(&r, verdict, text, &p) < 0) {
			fprintf(stderr, "cove doctor: out of memory\n");
			return 1;
		}
	} else {
		struct utsname u;
		if (uname(&u) == 0)
			printf("host: %s %s %s\n", u.sysname, u.release, u.machine);
		for (size_t i = 0; i < r.n; i++)
			printf("%-5s %-19s %s\n", level_names[r.c[i].level], r.c[i].name,
			       r.c[i].detail);
		printf("verdict: %s\n", text);
	}
	return strcmp(verdict, "none") ? 0 : 1;
}
