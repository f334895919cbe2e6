/* cove-agent: PID 1 of a Cove guest (or a service under another init).
 *
 * Sets up the guest system, listens on vsock port PROTO_AGENT_PORT, tells
 * the host it is ready (HELLO to CID 2, port PROTO_READY_PORT) and serves
 * each connection on its own thread (agent_serve_conn).  As PID 1 it also
 * reaps orphans; statuses of processes the exec handlers started are handed
 * to them (spawn.h), not dropped. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "proto.h"
#include "restore.h"
#include "spawn.h"
#include "sys.h"

#define AGENT_NAME        "cove-agent"
#define READY_TRIES       20
#define READY_BACKOFF_MS  10 /* doubled per try, up to READY_BACKOFF_MAX */
#define READY_BACKOFF_MAX 500
#define THREAD_STACK      (1024 * 1024)

static void log_err(const char *what, int err)
{
	fprintf(stderr, "cove-agent: %s: %s\n", what, strerror(err));
}

/* Children must never get our sockets as stdio: keep 0-2 taken. */
static void ensure_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			break;
	}
}

static void shutdown_vm(void *opaque)
{
	(void)opaque;
	sync();
	/* With reboot=k the reset goes through the i8042 and ends the VM. */
	if (reboot(RB_AUTOBOOT) < 0)
		log_err("reboot", errno);
}

static const struct agent_config config = { .shutdown = shutdown_vm,
	                                    .restored = agent_restore_apply };

static void *serve_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	agent_serve_conn(fd, &config);
	close(fd);
	return NULL;
}

static uint64_t uptime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int send_hello(void)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
		                  .svm_cid = VMADDR_CID_HOST,
		                  .svm_port = PROTO_READY_PORT };
	int r = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
	} else {
		char buf[128];
		int n = snprintf(buf, sizeof(buf),
		                 "{\"version\":%d,\"agent\":\"" AGENT_NAME "\",\"uptime_ms\":%llu}",
		                 PROTO_VERSION, (unsigned long long)uptime_ms());
		r = proto_send(fd, PROTO_HELLO, 0, buf, (uint32_t)n);
	}
	close(fd);
	return r;
}

/* The readiness handshake runs beside the accept loop: a host that is slow
 * to listen must not delay serving. */
static void *ready_thread(void *arg)
{
	(void)arg;
	unsigned backoff = READY_BACKOFF_MS;
	int r = 0;
	for (int i = 0; i < READY_TRIES; i++) {
		r = send_hello();
		if (r == 0)
			return NULL;
		struct timespec ts = { .tv_sec = backoff / 1000,
			               .tv_nsec = (long)(backoff % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		backoff = backoff * 2 > READY_BACKOFF_MAX ? READY_BACKOFF_MAX : backoff * 2;
	}
	log_err("telling the host we are ready", -r);
	return NULL;
}

static int start_thread(void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, THREAD_STACK);
	int r = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return -r;
}

static int listen_vsock(void)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
		                  .svm_cid = VMADDR_CID_ANY,
		                  .svm_port = PROTO_AGENT_PORT };
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* Orphans re-parented to PID 1 (exec'd processes' statuses are kept). */
static void reap_orphans(int sfd)
{
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
	}
	agent_reap_orphans();
}

static void accept_one(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return; /* EINTR, ECONNABORTED, EMFILE: nothing to keep */
	int r = start_thread(serve_thread, (void *)(intptr_t)fd);
	if (r < 0) {
		log_err("starting a connection thread", -r);
		close(fd);
	}
}

int main(void)
{
	agent_boot_poke();
	bool pid1 = getpid() == 1;
	ensure_stdio();
	signal(SIGPIPE, SIG_IGN);
	json_object_seed(0); /* before threads: jansson seeds its hash once */

	/* PID 1 learns of orphans through SIGCHLD, blocked in every thread and
	 * read from a signalfd by this loop. */
	int sfd = -1;
	if (pid1) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGCHLD);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
		if (sfd < 0)
			log_err("signalfd", errno);
	}
	agent_sys_setup(pid1);

	int lfd = listen_vsock();
	if (lfd < 0) {
		log_err("vsock listen on port 1024", -lfd);
		if (!pid1)
			return 1;
	} else {
		int r = start_thread(ready_thread, NULL);
		if (r < 0)
			log_err("starting the ready thread", -r);
	}
	/* PID 1 never returns: the kernel would panic. */
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
			               { .fd = sfd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("poll", errno);
			if (!pid1)
				return 1;
			pause();
			continue;
		}
		if (p[1].revents)
			reap_orphans(sfd);
		if (p[0].revents)
			accept_one(lfd);
	}
}
