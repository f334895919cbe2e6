/* Process creation for EXEC.
 *
 * clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD), the way posix_spawn starts
 * processes: no copy of the agent's page tables, and the parent resumes once
 * the child has exec'd (or failed, which the child reports through memory
 * both share).  The pidfd lets the exec loop poll for the end of the process.
 * The child starts with exit signal 0, but execve() gives it SIGCHLD back,
 * so PID 1's orphan reaper can see it: spawned pids are tracked (below) and
 * the reaper keeps their statuses for agent_spawn_wait().
 *
 * The child runs on its own small stack in the parent's memory, as a thread
 * glibc does not know about: between clone and execve it makes plain system
 * calls only (no malloc, no stdio, no glibc set*id(), which would try to
 * broadcast to the parent's threads), writes nothing of the parent's but
 * its report, and is not instrumented by ASan (whose stack bookkeeping
 * belongs to the parent thread). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errf.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define P_PIDFD_ID   ((idtype_t)3) /* P_PIDFD: Linux 5.4; glibc 2.36 lacks the name */
#define CHILD_STACK  (64 * 1024)   /* exec_search's PATH_MAX buffer and a few frames */
#define CHILD_CODE   __attribute__((no_sanitize("address")))

enum spawn_step {
	STEP_SETSID,
	STEP_CTTY,
	STEP_FDS,
	STEP_GROUPS,
	STEP_GID,
	STEP_UID,
	STEP_CWD,
	STEP_EXEC,
};

/* What a child that could not exec leaves for its parent before _exit. */
struct child_report {
	int32_t step;
	int32_t err; /* 0: it exec'd */
};

struct child_args {
	const struct agent_spawn *s;
	struct child_report cr;
};

/* Signals the agent (or a test harness around it) may ignore or handle;
 * ignored dispositions would survive execve. */
static const int reset_signals[] = { SIGPIPE, SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGCHLD,
	                             SIGALRM, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU };

CHILD_CODE static int fd_above_stdio(int fd)
{
	return fd > STDERR_FILENO ? fd : fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
}

/* execvpe's search, on the stack: execvpe is not guaranteed to be free of
 * allocation.  Returns only on failure, with errno set. */
CHILD_CODE static void exec_search(const char *file, const char *path, char *const argv[],
                                   char *const envp[])
{
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return;
	}
	size_t flen = strlen(file);
	char buf[PATH_MAX];
	bool eacces = false;
	const char *p = path ? path : DEFAULT_PATH;
	for (;;) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		if (dlen + flen + 2 <= sizeof(buf)) {
			memcpy(buf, p, dlen);
			size_t at = dlen;
			if (dlen && buf[dlen - 1] != '/')
				buf[at++] = '/';
			memcpy(buf + at, file, flen + 1);
			execve(buf, argv, envp);
			if (errno == EACCES)
				eacces = true;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE &&
			         errno != ENAMETOOLONG && errno != ELOOP)
				return; /* found, but not runnable: say why */
		}
		if (!*end)
			break;
		p = end + 1;
	}
	errno = eacces ? EACCES : ENOENT;
}

CHILD_CODE __attribute__((noreturn)) static int child_main(void *arg)
{
	struct child_args *a = arg;
	const struct agent_spawn *s = a->s;
	int step;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	for (size_t i = 0; i < sizeof(reset_signals) / sizeof(reset_signals[0]); i++)
		sigaction(reset_signals[i], &dfl, NULL);

	step = STEP_SETSID;
	if (setsid() < 0)
		goto fail;
	step = STEP_FDS;
	int fds[3];
	for (int i = 0; i < 3; i++) {
		fds[i] = fd_above_stdio(s->fds[i]);
		if (fds[i] < 0)
			goto fail;
	}
	step = STEP_CTTY;
	if (s->ctty && ioctl(fds[0], TIOCSCTTY, 0) < 0)
		goto fail;
	step = STEP_FDS;
	for (int i = 0; i < 3; i++) {
		if (dup2(fds[i], i) < 0)
			goto fail;
	}
	bool new_gid = s->gid >= 0 && (gid_t)s->gid != getegid();
	bool new_uid = s->uid >= 0 && (uid_t)s->uid != geteuid();
	step = STEP_GROUPS;
	if ((s->ngroups || new_gid || new_uid) &&
	    syscall(SYS_setgroups, s->ngroups, s->groups) < 0 && errno != EPERM)
		goto fail;
	step = STEP_GID;
	if (new_gid && syscall(SYS_setresgid, s->gid, s->gid, s->gid) < 0)
		goto fail;
	step = STEP_UID;
	if (new_uid && syscall(SYS_setresuid, s->uid, s->uid, s->uid) < 0)
		goto fail;
	step = STEP_CWD;
	if (s->cwd ? chdir(s->cwd) < 0 : (chdir(s->home ? s->home : "/root") < 0 && chdir("/") < 0))
		goto fail;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	step = STEP_EXEC;
	exec_search(s->argv[0], s->path, (char *const *)s->argv, s->envp);
fail:
	a->cr.step = step;
	a->cr.err = errno ? errno : EIO;
	_exit(127);
}

static const char *step_name(const struct agent_spawn *s, int step, const char **arg)
{
	*arg = "";
	switch (step) {
	case STEP_SETSID:
		return "setsid";
	case STEP_CTTY:
		return "controlling terminal";
	case STEP_FDS:
		return "stdio";
	case STEP_GROUPS:
		return "setgroups";
	case STEP_GID:
		return "setgid";
	case STEP_UID:
		return "setuid";
	case STEP_CWD:
		*arg = s->cwd ? s->cwd : "/";
		return "chdir";
	default:
		*arg = s->argv[0];
		return "exec";
	}
}

/* Processes started by agent_spawn() that have not been waited for, and the
 * statuses the orphan reaper collected for them.  exec(2) gives a child the
 * ordinary SIGCHLD exit signal back, so PID 1's waitpid(-1) can reap an
 * exec'd process before its handler does; the reaper therefore hands such
 * statuses over instead of dropping them.  One lock covers spawning (so a
 * pid is tracked before anyone can reap it), reaping and waiting. */
struct tracked {
	pid_t pid;
	bool reaped;
	int code, sig;
	struct tracked *next;
};

static pthread_mutex_t track_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tracked *track_list;

static struct tracked **track_find(pid_t pid)
{
	struct tracked **pp = &track_list;
	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void decode_status(int status, int *code, int *sig)
{
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
	*sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

void agent_reap_orphans(void)
{
	pthread_mutex_lock(&track_lock);
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
		struct tracked *t = *track_find(pid);
		if (t) {
			t->reaped = true;
			decode_status(status, &t->code, &t->sig);
		}
	}
	pthread_mutex_unlock(&track_lock);
}

int agent_spawn_wait(pid_t pid, int pidfd, bool nohang, int *code, int *sig)
{
	for (;;) {
		pthread_mutex_lock(&track_lock);
		struct tracked **pp = track_find(pid);
		struct tracked *t = *pp;
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		int r;
		if (t && t->reaped) {
			*code = t->code;
			*sig = t->sig;
			r = 0;
		} else if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | __WALL | WNOHANG) < 0) {
			r = errno == EINTR ? 1 : -errno;
		} else if (si.si_pid == 0) {
			r = 1;
		} else {
			*code = si.si_code == CLD_EXITED ? si.si_status : 0;
			*sig = si.si_code == CLD_EXITED ? 0 : si.si_status;
			r = 0;
		}
		if (r != 1 && t) {
			*pp = t->next;
			free(t);
		}
		pthread_mutex_unlock(&track_lock);
		if (r != 1 || nohang)
			return r;
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		(void)poll(&p, 1, -1);
	}
}

int agent_spawn(const struct agent_spawn *s, pid_t *pid, int *pidfd, char *err, size_t errlen)
{
	void *stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return errf(err, errlen, -errno, "child stack: %s", strerror(errno));
	/* No handler of ours may run in the child, which shares our memory:
	 * signals stay blocked until it has reset the dispositions. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	struct child_args a = { .s = s };
	int pfd = -1;
	struct tracked *t = calloc(1, sizeof(*t));
	if (!t) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		munmap(stack, CHILD_STACK);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	pthread_mutex_lock(&track_lock);
	pid_t child = clone(child_main, (uint8_t *)stack + CHILD_STACK,
	                    CLONE_VM | CLONE_VFORK | CLONE_PIDFD, &a, &pfd);
	int e = errno;
	if (child > 0) {
		t->pid = child;
		t->next = track_list;
		track_list = t;
	} else {
		free(t);
	}
	pthread_mutex_unlock(&track_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, CHILD_STACK);
	if (child < 0)
		return errf(err, errlen, -e, "clone: %s", strerror(e));
	if (a.cr.err == 0) {
		*pid = child;
		*pidfd = pfd;
		return 0;
	}
	int code, sig;
	agent_spawn_wait(child, pfd, false, &code, &sig);
	close(pfd);
	const char *arg;
	const char *what = step_name(s, a.cr.step, &arg);
	return errf(err, errlen, -a.cr.err, "%s%s%s: %s", what, arg[0] ? " " : "", arg,
	            strerror(a.cr.err));
}
