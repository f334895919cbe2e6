#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/kvm_stats.h"
#include "base/seccomp.h"
#include "clock.h"
#include "core/vm.h"
#include "core/vm_devices.h"
#include "errf.h"
#include "snapshot/prefetch.h"
#include "snapshot/snapshot.h"
#include "virtio/net.h"

#define API_LINE_MAX  4096
#define API_MAX_CONNS 16
/* A connection has this long to send a whole request line, from its
 * accept or from its last answer; then it is closed. */
#define API_REQUEST_MS 10000
/* How long a snapshot waits for the I/O thread to stop between callbacks. */
#define API_PARK_MS 5000
#define SMAPS_MAX   (8 << 20)

struct api_conn {
	int fd;
	int passed; /* an fd that came with the pending request (SCM_RIGHTS), or -1 */
	int64_t deadline_ms;
	size_t len;
	char buf[API_LINE_MAX];
};

struct vmm_api {
	struct vm *vm;
	int lfd;
	int stop_fd;  /* eventfd: vmm_api_destroy() ends the thread */
	int smaps_fd; /* /proc/self/smaps, opened before any jail; -1 if none */
	pthread_t thread;
	bool thread_started;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct api_conn *conns[API_MAX_CONNS];
};

static void reply(char *out, size_t outlen, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	snprintf(out, outlen, "%s\n", s ? s : "{\"ok\":false,\"error\":\"out of memory\"}");
	free(s);
}

static void reply_err(char *out, size_t outlen, const char *msg)
{
	reply(out, outlen, json_pack("{s:b, s:s}", "ok", 0, "error", msg));
}

/* The whole of a seq file from offset 0 into a malloc'ed, NUL-terminated
 * buffer (seq files regenerate on a read from 0). */
static char *read_seq(int fd, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (cap - n < 4096) {
			char *b = cap < SMAPS_MAX ? realloc(buf, cap * 2) : NULL;
			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		ssize_t k = pread(fd, buf + n, cap - n - 1, (off_t)n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k < 0)
				break;
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		n += (size_t)k;
	}
	free(buf);
	return NULL;
}

/* kB of this process's resident memory outside guest RAM: the VMM's own
 * cost (smaps: every mapping's Rss except the one at the RAM base).
 * -1 when smaps could not be opened at start or read now. */
static long vmm_rss_kb(const struct vm *vm, int smaps_fd, long *guest_kb)
{
	*guest_kb = 0;
	size_t len = 0;
	char *text = smaps_fd >= 0 ? read_seq(smaps_fd, &len) : NULL;
	if (!text)
		return -1;
	long total = 0, guest = 0;
	bool in_guest = false;
	unsigned long base = (unsigned long)(uintptr_t)vm->mem.base;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned long start, end;
		long kb;
		char *dash = strchr(line, '-'), *sp = strchr(line, ' ');
		if (dash && sp && dash < sp && sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in_guest = start == base;
		else if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
			if (in_guest)
				guest += kb;
			else
				total += kb;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	*guest_kb = guest;
	return total;
}

/* PIO and MMIO exits by port or address, summed over vCPUs
 * (core/exit_hist.h); "other" counts those the tables had no room for. */
static json_t *exit_addrs(struct vm *vm)
{
	struct exit_hist_slot e[2 * EXIT_HIST_SLOTS];
	size_t n = 0;
	uint64_t lost = 0;
	for (unsigned int i = 0; i < vm->ncpus; i++)
		lost += exit_hist_sum(&vm->vcpus[i].hist, e, sizeof(e) / sizeof(e[0]), &n);
	json_t *o = json_object();
	for (size_t i = 0; o && i < n; i++) {
		char name[40];
		exit_hist_name(&e[i], name, sizeof(name));
		json_object_set_new(o, name, json_integer((json_int_t)e[i].count));
	}
	if (o && lost)
		json_object_set_new(o, "other", json_integer((json_int_t)lost));
	return o;
}

static json_t *stats(struct vm *vm, int smaps_fd)
{
	struct kvm_counter c[KVM_STATS_MAX];
	size_t n = 0;
	int r = 0;
	for (unsigned int i = 0; i < vm->ncpus && r == 0; i++)
		r = kvm_stats_add(vm->vcpus[i].stats_fd, c, KVM_STATS_MAX, &n);
	json_t *kvm = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(kvm, c[i].name, json_integer((json_int_t)c[i].value));
	long guest_kb = 0, own_kb = vmm_rss_kb(vm, smaps_fd, &guest_kb);
	uint64_t rd = 0, wr = 0;
	vm_disk_io(vm, &rd, &wr);
	json_t *times = json_pack(
	    "{s:I, s:I, s:I, s:I, s:I}", "pool_request_us", (json_int_t)vm->t_request_us,
	    "process_start_mono_us", (json_int_t)boot_timer_start_mono_us(), "vm_created_us",
	    (json_int_t)vm->t_created_us, "first_kvm_run_us",
	    (json_int_t)__atomic_load_n(&vm->t_first_run_us, __ATOMIC_RELAXED), "guest_init_us",
	    (json_int_t)__atomic_load_n(&vm->boot_timer.fired, __ATOMIC_RELAXED));
	unsigned int np;
	const struct boot_phase *ph = boot_phases(&np);
	json_t *phases = json_object();
	for (unsigned int i = 0; i < np; i++)
		json_object_set_new(phases, ph[i].name, json_integer((json_int_t)ph[i].us));
	if (times)
		json_object_set_new(times, "phases", phases);
	else
		json_decref(phases);
	uint64_t thr = 0, thr_ns = 0;
	vm_disk_throttled(vm, &thr, &thr_ns);
	json_t *o = json_pack("{s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "ok", 1, "kvm", kvm,
	                      "times", times, "vmm_rss_kb", (json_int_t)own_kb, "guest_rss_kb",
	                      (json_int_t)guest_kb, "disk_read_bytes", (json_int_t)rd,
	                      "disk_written_bytes", (json_int_t)wr, "disk_throttled",
	                      (json_int_t)thr, "disk_throttled_ms", (json_int_t)(thr_ns / 1000000));
	if (o)
		json_object_set_new(o, "exit_addrs", exit_addrs(vm));
	struct prefetch_stats ps;
	prefetch_get_stats(&ps);
	if (o)
		json_object_set_new(
		    o, "prefetch",
		    json_pack("{s:I, s:I, s:I, s:I, s:i, s:I, s:I, s:i}", "ranges",
		              (json_int_t)ps.ranges, "pages", (json_int_t)ps.pages, "written",
		              (json_int_t)ps.written, "us", (json_int_t)ps.us, "error", ps.error,
		              "prefaulted", (json_int_t)ps.prefaulted, "prefault_us",
		              (json_int_t)ps.prefault_us, "prefault_error", ps.prefault_error));
	if (o && vm_net(vm)) {
		struct vnet_stats ns;
		vnet_get_stats(vm_net(vm), &ns);
		json_t *net = json_pack(
		    "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "rx_packets",
		    (json_int_t)ns.rx_packets, "rx_bytes", (json_int_t)ns.rx_bytes, "rx_dropped",
		    (json_int_t)ns.rx_dropped, "rx_bad_chains", (json_int_t)ns.rx_bad_chains,
		    "rx_throttled", (json_int_t)ns.rx_throttled, "tx_packets",
		    (json_int_t)ns.tx_packets, "tx_bytes", (json_int_t)ns.tx_bytes, "tx_dropped",
		    (json_int_t)ns.tx_dropped, "tx_bad_chains", (json_int_t)ns.tx_bad_chains,
		    "tx_throttled", (json_int_t)ns.tx_throttled, "tx_bad_headers",
		    (json_int_t)ns.tx_bad_headers);
		if (net)
			json_object_set_new(o, "net", net);
	}
	return o;
}

static void handle(struct vm *vm, int smaps_fd, const char *line, int passed, char *out,
                   size_t outlen)
{
	json_error_t jerr;
	json_t *req = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	if (!req || !json_is_object(req)) {
		json_decref(req);
		reply_err(out, outlen, "the request is not a JSON object");
		return;
	}
	const char *op = json_string_value(json_object_get(req, "op"));
	char msg[512];
	if (!op) {
		reply_err(out, outlen, "the request has no \"op\" string");
	} else if (!vm) {
		reply_err(out, outlen, "no VM");
	} else if (!strcmp(op, "status")) {
		pthread_mutex_lock(&vm->lock);
		const char *st = vm->stop_requested        ? "stopping"
		                 : vm->state == VM_PAUSED  ? "paused"
		                 : vm->state == VM_RUNNING ? "running"
		                 : vm->state == VM_CREATED ? "created"
		                                           : "stopped";
		pthread_mutex_unlock(&vm->lock);
		reply(out, outlen, json_pack("{s:b, s:s}", "ok", 1, "state", st));
	} else if (!strcmp(op, "pause") || !strcmp(op, "resume")) {
		int r = op[0] == 'p' ? vm_pause(vm) : vm_resume(vm);
		if (r < 0)
			reply_err(out, outlen, "the VM is stopping");
		else
			reply(out, outlen, json_pack("{s:b}", "ok", 1));
	} else if (!strcmp(op, "snapshot")) {
		const char *dir = json_string_value(json_object_get(req, "dir"));
		json_t *then_j = json_object_get(req, "then");
		const char *then = then_j ? json_string_value(then_j) : "resume";
		bool use_fd = json_is_true(json_object_get(req, "dirfd"));
		if (!dir) {
			reply_err(out, outlen, "snapshot needs \"dir\", an absolute path");
		} else if (use_fd && passed < 0) {
			reply_err(out, outlen,
			          "\"dirfd\": true needs the directory's fd passed "
			          "with the request");
		} else if (!then || (strcmp(then, "resume") && strcmp(then, "stop"))) {
			reply_err(out, outlen, "\"then\" must be \"resume\" or \"stop\"");
		} else {
			bool stop = !strcmp(then, "stop");
			struct vm_snapshot_result res;
			/* No queue work may run while the disks are swapped. */
			int r = evloop_park(&vm->loop, API_PARK_MS);
			if (r < 0)
				snprintf(msg, sizeof(msg), "the I/O thread did not pause: %s",
				         strerror(-r));
			else
				r = vm_snapshot(vm, dir, use_fd ? passed : -1, !stop, &res, msg,
				                sizeof(msg));
			evloop_unpark(&vm->loop);
			if (r < 0) {
				if (stop && vm_resume(vm) < 0)
					snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
					         " (and the VM is stopping)");
				reply_err(out, outlen, msg);
			} else {
				reply(out, outlen,
				      json_pack(
				          "{s:b, s:I, s:I, s:I, s:I}", "ok", 1, "memory_bytes",
				          (json_int_t)res.memory_bytes, "memory_disk_bytes",
				          (json_int_t)res.memory_disk_bytes, "state_bytes",
				          (json_int_t)res.state_bytes, "ms", (json_int_t)res.ms));
				if (stop)
					vm_request_stop(vm, VM_EXIT_SIGNAL,
					                "stopped after a snapshot");
			}
		}
	} else if (!strcmp(op, "working_set")) {
		/* The pages touched since the restore, as a record written into
		 * the file passed with the request (snapshot/prefetch.h). */
		uint32_t nr = 0;
		uint64_t np = 0;
		if (passed < 0)
			reply_err(out, outlen, "working_set needs a file passed with it");
		else if (prefetch_record(&vm->mem, passed, &nr, &np, msg, sizeof(msg)) < 0)
			reply_err(out, outlen, msg);
		else
			reply(out, outlen,
			      json_pack("{s:b, s:I, s:I}", "ok", 1, "ranges", (json_int_t)nr,
			                "pages", (json_int_t)np));
	} else if (!strcmp(op, "stats")) {
		reply(out, outlen, stats(vm, smaps_fd));
	} else if (!strcmp(op, "stop")) {
		reply(out, outlen, json_pack("{s:b}", "ok", 1));
		vm_request_stop(vm, VM_EXIT_SIGNAL, "stopped through the API");
	} else {
		snprintf(msg, sizeof(msg), "unknown op \"%.64s\"", op);
		reply_err(out, outlen, msg);
	}
	json_decref(req);
}

void vmm_api_handle(struct vm *vm, const char *line, int passed, char *out, size_t outlen)
{
	handle(vm, -1, line, passed, out, outlen);
}

/* ---- the API thread ------------------------------------------------------- */

static void conn_close(struct vmm_api *a, unsigned int i)
{
	close(a->conns[i]->fd);
	if (a->conns[i]->passed >= 0)
		close(a->conns[i]->passed);
	free(a->conns[i]);
	a->conns[i] = NULL;
}

/* Sends a whole line without blocking: an answer is at most a few KiB
 * and the socket buffer holds it; a client that stops reading loses it. */
static void send_line(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

/* Reads what conn i sent and answers each whole line; false: close it. */
static bool conn_read(struct vmm_api *a, struct api_conn *c)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = c->buf + c->len, .iov_len = sizeof(c->buf) - 1 - c->len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
	};
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	/* At most one fd rides on a request; any other is closed at once. */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int pfd;
			memcpy(&pfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->passed < 0)
				c->passed = pfd;
			else
				close(pfd);
		}
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	c->len += (size_t)n;
	char out[16384];
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (!nl)
			break;
		*nl = '\0';
		handle(a->vm, a->smaps_fd, c->buf, c->passed, out, sizeof(out));
		if (c->passed >= 0)
			close(c->passed);
		c->passed = -1;
		send_line(c->fd, out);
		size_t used = (size_t)(nl - c->buf) + 1;
		memmove(c->buf, nl + 1, c->len - used);
		c->len -= used;
		c->deadline_ms = mono_ms() + API_REQUEST_MS;
	}
	if (c->len == sizeof(c->buf) - 1) {
		send_line(c->fd, "{\"ok\":false,\"error\":\"request line too long\"}\n");
		return false;
	}
	return true;
}

static void on_accept(struct vmm_api *a)
{
	int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	unsigned int slot = API_MAX_CONNS;
	for (unsigned int i = 0; i < API_MAX_CONNS && slot == API_MAX_CONNS; i++)
		if (!a->conns[i])
			slot = i;
	struct api_conn *c = slot < API_MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		send_line(fd, "{\"ok\":false,\"error\":\"too many control connections\"}\n");
		close(fd);
		return;
	}
	c->fd = fd;
	c->passed = -1;
	c->deadline_ms = mono_ms() + API_REQUEST_MS;
	a->conns[slot] = c;
}

/* The API thread: one poll over the stop eventfd, the listener and every
 * connection, woken at the earliest connection deadline. */
static void *api_thread(void *arg)
{
	struct vmm_api *a = arg;
	for (;;) {
		struct pollfd p[2 + API_MAX_CONNS];
		unsigned int idx[API_MAX_CONNS];
		nfds_t n = 0;
		p[n++] = (struct pollfd){ .fd = a->stop_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = a->lfd, .events = POLLIN };
		int64_t now = mono_ms(), next = -1;
		for (unsigned int i = 0; i < API_MAX_CONNS; i++) {
			struct api_conn *c = a->conns[i];
			if (!c)
				continue;
			if (c->deadline_ms <= now) {
				send_line(c->fd, "{\"ok\":false,\"error\":\"no whole request in "
				                 "time\"}\n");
				conn_close(a, i);
				continue;
			}
			if (next < 0 || c->deadline_ms < next)
				next = c->deadline_ms;
			idx[n - 2] = i;
			p[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		}
		int timeout = next < 0 ? -1 : (int)(next - now);
		int k = poll(p, n, timeout);
		if (k < 0 && errno != EINTR)
			break;
		if (k <= 0)
			continue;
		if (p[0].revents)
			break;
		for (nfds_t j = 2; j < n; j++)
			if (p[j].revents && !conn_read(a, a->conns[idx[j - 2]]))
				conn_close(a, idx[j - 2]);
		if (p[1].revents & POLLIN)
			on_accept(a);
	}
	return NULL;
}

int vmm_api_create(struct vm *vm, const char *path, struct vmm_api **out, char *err, size_t errlen)
{
	*out = NULL;
	struct vmm_api *a = calloc(1, sizeof(*a));
	if (!a)
		return errf(err, errlen, -ENOMEM, "out of memory");
	a->vm = vm;
	a->stop_fd = a->smaps_fd = -1;
	if (strlen(path) >= sizeof(a->path)) {
		free(a);
		return errf(err, errlen, -ENAMETOOLONG, "--api path '%s' is too long for a socket",
		            path);
	}
	snprintf(a->path, sizeof(a->path), "%s", path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, a->path, sizeof(a->path));
	a->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->lfd < 0) {
		free(a);
		return errf(err, errlen, -errno, "socket: %s", strerror(errno));
	}
	/* A socket nobody answers on is stale (a VMM that died): replace it. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			close(a->lfd);
			free(a);
			return errf(err, errlen, -EEXIST,
			            "--api path '%s' exists and is not a socket", path);
		}
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			close(a->lfd);
			free(a);
			return errf(err, errlen, -EADDRINUSE, "--api socket '%s' is in use", path);
		}
		unlink(path);
	}
	/* 0600 whatever the umask: a Unix socket's file takes its mode from
	 * the socket inode, which fchmod sets before bind creates the file.
	 * (umask() around bind would change it for every thread at once.) */
	int r = fchmod(a->lfd, 0600);
	if (r == 0)
		r = bind(a->lfd, (struct sockaddr *)&sa, sizeof(sa));
	a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r < 0 || a->stop_fd < 0 || listen(a->lfd, 16) < 0) {
		int e = errno;
		close(a->lfd);
		if (a->stop_fd >= 0)
			close(a->stop_fd);
		if (r == 0)
			unlink(path);
		free(a);
		return errf(err, errlen, -e, "cannot listen on --api '%s': %s", path, strerror(e));
	}
	/* Read again on each stats request with pread: it stays readable after
	 * the jail leaves /proc behind. */
	a->smaps_fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	/* jansson seeds its hash function on first use, from /dev/urandom:
	 * now, while files can still be opened. */
	json_object_seed(0);
	*out = a;
	return 0;
}

int vmm_api_listen_fd(const struct vmm_api *a)
{
	return a->lfd;
}

int vmm_api_moved(struct vmm_api *a, struct vm *vm, const char *path)
{
	if (strlen(path) >= sizeof(a->path))
		return -ENAMETOOLONG;
	snprintf(a->path, sizeof(a->path), "%s", path);
	a->vm = vm;
	return 0;
}

int vmm_api_start(struct vmm_api *a, enum vmm_seccomp_mode mode, char *err, size_t errlen)
{
	int r = vmm_seccomp_thread_start(&a->thread, "api", VMM_THREAD_API, mode, api_thread, a,
	                                 err, errlen);
	if (r == 0)
		a->thread_started = true;
	return r;
}

void vmm_api_destroy(struct vmm_api *a)
{
	if (!a)
		return;
	if (a->thread_started) {
		uint64_t one = 1;
		if (write(a->stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(a->thread, NULL);
		a->thread_started = false;
	}
	for (unsigned int i = 0; i < API_MAX_CONNS; i++)
		if (a->conns[i])
			conn_close(a, i);
	close(a->lfd);
	close(a->stop_fd);
	if (a->smaps_fd >= 0)
		close(a->smaps_fd);
	unlink(a->path);
	free(a);
}
