/* The jail's ordered steps (jail.h says which and why). */
#include "jail/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errf.h"
#include "sanitize.h"

/* Closes [lo, hi] (close_range where the kernel has it, else one by one). */
static void close_fds(unsigned int lo, unsigned int hi)
{
	if (lo > hi)
		return;
	if (syscall(SYS_close_range, lo, hi, 0U) == 0)
		return;
	struct rlimit rl;
	long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
	               ? (long)rl.rlim_cur
	               : 65536;
	for (long fd = lo; fd < max && fd <= (long)hi; fd++)
		(void)close((int)fd);
}

void jail_scrub_process(int keep_fd)
{
	if (keep_fd > 2) {
		close_fds(3U, (unsigned int)keep_fd - 1);
		close_fds((unsigned int)keep_fd + 1, ~0U);
	} else {
		close_fds(3U, ~0U);
	}
	(void)clearenv();
}

int jail_path(const char *root, const char *host_path, char *out, size_t outlen)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(host_path, root, n) != 0 || (host_path[n] != '/' && host_path[n] != 0))
		return -EXDEV;
	const char *rest = host_path[n] ? host_path + n : "/";
	if ((size_t)snprintf(out, outlen, "%s", rest) >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

/* The mount flags root has now: a bind remount inside a user namespace
 * may add flags but must keep the ones it inherited. */
static unsigned long current_flags(const char *path)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return 0;
	unsigned long f = 0;
	if (sv.f_flag & ST_RDONLY)
		f |= MS_RDONLY;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

/* dev/NAME inside the jail: an empty file with the host's node bound on it. */
static int bind_dev(const char *root, const char *name, char *err, size_t errlen)
{
	char host[64], in[4096];
	snprintf(host, sizeof(host), "/dev/%s", name);
	if ((size_t)snprintf(in, sizeof(in), "%s/dev/%s", root, name) >= sizeof(in))
		return errf(err, errlen, -ENAMETOOLONG, "jail: the path %s/dev is too long", root);
	int fd = open(in, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errf(err, errlen, -errno, "jail: cannot create %s: %s", in, strerror(errno));
	close(fd);
	if (mount(host, in, NULL, MS_BIND, NULL) < 0)
		return errf(err, errlen, -errno, "jail: cannot bind %s into the jail: %s", host,
		            strerror(errno));
	return 0;
}

/* Sanitizer builds only (common/sanitize.h): LeakSanitizer, at exit,
 * lists the threads in /proc/self/task and reads /proc/self/maps, so the
 * jail gets a /proc of cove-vmm's own PID namespace (read-only).  Other
 * builds leave /proc behind. */
static int mount_proc(const char *root, char *err, size_t errlen)
{
	char in[4096];
	if ((size_t)snprintf(in, sizeof(in), "%s/proc", root) >= sizeof(in))
		return errf(err, errlen, -ENAMETOOLONG, "jail: the path %s/proc is too long", root);
	if (mkdir(in, 0555) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "jail: cannot create %s: %s", in, strerror(errno));
	if (mount("proc", in, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
		return errf(err, errlen, -errno, "jail: cannot mount /proc for the sanitizer: %s",
		            strerror(errno));
	return 0;
}

/* The jail's uid owns what is in its root (disks, sockets), so that it
 * can copy a disk into a snapshot and replace it; nothing below is
 * followed. */
static int give_root(const char *root, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return errf(err, errlen, -e, "jail: cannot read %s: %s", root, strerror(e));
	}
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d)) && r == 0) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)))
			continue;
		if (fchownat(dfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			r = errf(err, errlen, -errno, "jail: cannot give %s/%s to uid %u: %s", root,
			         e->d_name, (unsigned)uid, strerror(errno));
	}
	closedir(d);
	return r;
}

/* Steps 1 and 2: our own mount namespace, then pivot_root into root. */
static int enter_root(const char *root, char *err, size_t errlen)
{
	if (unshare(CLONE_NEWNS) < 0)
		return errf(err, errlen, -errno, "jail: cannot make a mount namespace: %s",
		            strerror(errno));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return errf(err, errlen, -errno, "jail: cannot make the mounts private: %s",
		            strerror(errno));
	if (mount(root, root, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errf(err, errlen, -errno, "jail: cannot bind the jail root %s: %s", root,
		            strerror(errno));
	unsigned long keep = current_flags(root);
	if (mount(NULL, root, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC | keep,
	          NULL) < 0)
		return errf(err, errlen, -errno, "jail: cannot remount %s nosuid,nodev,noexec: %s",
		            root, strerror(errno));
	char dev[4096];
	if ((size_t)snprintf(dev, sizeof(dev), "%s/dev", root) >= sizeof(dev))
		return errf(err, errlen, -ENAMETOOLONG, "jail: the path %s/dev is too long", root);
	if (mkdir(dev, 0755) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "jail: cannot create %s: %s", dev,
		            strerror(errno));
	int r = bind_dev(root, "kvm", err, errlen);
	if (r == 0)
		r = bind_dev(root, "urandom", err, errlen);
	if (r == 0 && SAN_BUILD)
		r = mount_proc(root, err, errlen);
	if (r < 0)
		return r;
	if (chdir(root) < 0)
		return errf(err, errlen, -errno, "jail: cannot enter %s: %s", root,
		            strerror(errno));
	/* pivot_root(".", "."): the old root ends up stacked on the new one
	 * and is detached at once, with everything below it. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return errf(err, errlen, -errno, "jail: pivot_root into %s: %s", root,
		            strerror(errno));
	if (umount2(".", MNT_DETACH) < 0)
		return errf(err, errlen, -errno, "jail: cannot detach the old root: %s",
		            strerror(errno));
	if (chdir("/") < 0)
		return errf(err, errlen, -errno, "jail: chdir /: %s", strerror(errno));
	return 0;
}

static int set_limits(const struct jail_config *jc, char *err, size_t errlen)
{
	struct rlimit core = { 0, 0 };
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) < 0)
		return errf(err, errlen, -errno, "jail: getrlimit: %s", strerror(errno));
	if (nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max > JAIL_NOFILE)
		nofile.rlim_max = JAIL_NOFILE;
	nofile.rlim_cur = nofile.rlim_max;
	if (setrlimit(RLIMIT_CORE, &core) < 0 || setrlimit(RLIMIT_NOFILE, &nofile) < 0)
		return errf(err, errlen, -errno, "jail: setrlimit: %s", strerror(errno));
	if (jc->fsize) {
		struct rlimit fs = { jc->fsize, jc->fsize };
		if (setrlimit(RLIMIT_FSIZE, &fs) < 0)
			return errf(err, errlen, -errno, "jail: setrlimit fsize: %s",
			            strerror(errno));
		/* Past the limit a write fails with EFBIG rather than killing us. */
		signal(SIGXFSZ, SIG_IGN);
	}
	return 0;
}

/* Step 4: no capability left in any set, none to regain. */
static int clear_caps(char *err, size_t errlen)
{
	cap_t none = cap_init();
	if (!none)
		return errf(err, errlen, -ENOMEM, "jail: out of memory");
	int r = cap_set_proc(none);
	int e = errno;
	cap_free(none);
	if (r < 0)
		return errf(err, errlen, -e, "jail: cannot clear capabilities: %s", strerror(e));
	return 0;
}

static bool have_setpcap(void)
{
	cap_t now = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;
	if (now)
		(void)cap_get_flag(now, CAP_SETPCAP, CAP_EFFECTIVE, &v);
	cap_free(now);
	return v == CAP_SET;
}

/* Whether jail_bound() ran: what it did is not done twice. */
static bool bounded;

int jail_bound(char *err, size_t errlen)
{
	if (bounded)
		return 0;
	/* A process started without capabilities (a user with no user
	 * namespace) cannot shrink its bounding set, and needs not: it has
	 * nothing to lose, and no_new_privs keeps it from gaining any. */
	if (!have_setpcap())
		return 0;
	int last = (int)cap_max_bits();
	for (int c = 0; c < last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return errf(err, errlen, -errno,
			            "jail: cannot drop capability %d from the bounding set: %s", c,
			            strerror(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return errf(err, errlen, -errno, "jail: cannot clear ambient capabilities: %s",
		            strerror(errno));
	unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
	                     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
		return errf(err, errlen, -errno, "jail: cannot lock securebits: %s",
		            strerror(errno));
	bounded = true;
	return 0;
}

static int drop_privileges(const struct jail_config *jc, char *err, size_t errlen)
{
	if (!have_setpcap())
		return clear_caps(err, errlen);
	int r = jail_bound(err, errlen);
	if (r < 0)
		return r;
	if (jc->set_ids) {
		/* A change of ids clears the parent-death signal: keep it. */
		int pdeath = 0;
		(void)prctl(PR_GET_PDEATHSIG, &pdeath, 0, 0, 0);
		if (setgroups(0, NULL) < 0 || setresgid(jc->gid, jc->gid, jc->gid) < 0 ||
		    setresuid(jc->uid, jc->uid, jc->uid) < 0)
			return errf(err, errlen, -errno, "jail: cannot switch to uid %u gid %u: %s",
			            (unsigned)jc->uid, (unsigned)jc->gid, strerror(errno));
		if (setuid(0) == 0)
			return errf(err, errlen, -EPERM, "jail: uid 0 could be regained");
		if (pdeath)
			(void)prctl(PR_SET_PDEATHSIG, pdeath, 0, 0, 0);
	}
	return clear_caps(err, errlen);
}

int jail_enter(const struct jail_config *jc, char *report, size_t replen, char *err, size_t errlen)
{
	int r = 0;
	if (jc->root && jc->set_ids && (r = give_root(jc->root, jc->uid, jc->gid, err, errlen)) < 0)
		return r;
	if (jc->root && (r = enter_root(jc->root, err, errlen)) < 0)
		return r;
	if ((r = set_limits(jc, err, errlen)) < 0 || (r = drop_privileges(jc, err, errlen)) < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return errf(err, errlen, -errno, "jail: cannot set no_new_privs: %s",
		            strerror(errno));
	char ids[64] = "";
	if (jc->set_ids)
		snprintf(ids, sizeof(ids), ", uid %u gid %u", (unsigned)jc->uid, (unsigned)jc->gid);
	char fsize[48] = "";
	if (jc->fsize)
		snprintf(fsize, sizeof(fsize), " fsize %llu", (unsigned long long)jc->fsize);
	snprintf(report, replen,
	         "%s%s%s, capabilities none, no_new_privs, rlimits core 0 nofile %d%s",
	         jc->root ? "pivot_root into " : "no mount jail (seccomp and no_new_privs only)",
	         jc->root ? jc->root : "", ids, JAIL_NOFILE, fsize);
	return 0;
}
