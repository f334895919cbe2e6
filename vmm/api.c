#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/kvm_stats.h"
#include "core/vm.h"
#include "core/vm_devices.h"
#include "errf.h"
#include "snapshot/snapshot.h"

#define API_LINE_MAX  4096
#define API_MAX_CONNS 16

struct api_conn {
	struct vmm_api *api;
	int fd;
	size_t len;
	char buf[API_LINE_MAX];
};

struct vmm_api {
	struct vm *vm;
	int lfd;
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

/* kB of this process's resident memory outside guest RAM: the VMM's own
 * cost (smaps: every mapping's Rss except the one at the RAM base). */
static long vmm_rss_kb(const struct vm *vm, long *guest_kb)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	long total = 0, guest = 0;
	bool in_guest = false;
	unsigned long base = (unsigned long)(uintptr_t)vm->mem.base;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		long kb;
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in_guest = start == base;
		else if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
			if (in_guest)
				guest += kb;
			else
				total += kb;
		}
	}
	fclose(f);
	*guest_kb = guest;
	return total;
}

static json_t *stats(struct vm *vm)
{
	struct kvm_counter c[KVM_STATS_MAX];
	size_t n = 0;
	int r = 0;
	for (unsigned int i = 0; i < vm->ncpus && r == 0; i++)
		r = kvm_stats_add(vm->vcpus[i].stats_fd, c, KVM_STATS_MAX, &n);
	json_t *kvm = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(kvm, c[i].name, json_integer((json_int_t)c[i].value));
	long guest_kb = 0, own_kb = vmm_rss_kb(vm, &guest_kb);
	uint64_t rd = 0, wr = 0;
	vm_disk_io(vm, &rd, &wr);
	json_t *times = json_pack(
	    "{s:I, s:I, s:I, s:I}", "process_start_mono_us", (json_int_t)boot_timer_start_mono_us(),
	    "vm_created_us", (json_int_t)vm->t_created_us, "first_kvm_run_us",
	    (json_int_t)__atomic_load_n(&vm->t_first_run_us, __ATOMIC_RELAXED), "guest_init_us",
	    (json_int_t)__atomic_load_n(&vm->boot_timer.fired, __ATOMIC_RELAXED));
	uint64_t thr = 0, thr_ns = 0;
	vm_disk_throttled(vm, &thr, &thr_ns);
	return json_pack("{s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "ok", 1, "kvm", kvm,
	                 "times", times, "vmm_rss_kb", (json_int_t)own_kb, "guest_rss_kb",
	                 (json_int_t)guest_kb, "disk_read_bytes", (json_int_t)rd,
	                 "disk_written_bytes", (json_int_t)wr, "disk_throttled", (json_int_t)thr,
	                 "disk_throttled_ms", (json_int_t)(thr_ns / 1000000));
}

void vmm_api_handle(struct vm *vm, const char *line, char *out, size_t outlen)
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
		if (!dir) {
			reply_err(out, outlen, "snapshot needs \"dir\", an absolute path");
		} else if (!then || (strcmp(then, "resume") && strcmp(then, "stop"))) {
			reply_err(out, outlen, "\"then\" must be \"resume\" or \"stop\"");
		} else {
			bool stop = !strcmp(then, "stop");
			struct vm_snapshot_result res;
			int r = vm_snapshot(vm, dir, !stop, &res, msg, sizeof(msg));
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
	} else if (!strcmp(op, "stats")) {
		reply(out, outlen, stats(vm));
	} else if (!strcmp(op, "stop")) {
		reply(out, outlen, json_pack("{s:b}", "ok", 1));
		vm_request_stop(vm, VM_EXIT_SIGNAL, "stopped through the API");
	} else {
		snprintf(msg, sizeof(msg), "unknown op \"%.64s\"", op);
		reply_err(out, outlen, msg);
	}
	json_decref(req);
}

static void conn_close(struct api_conn *c)
{
	struct vmm_api *a = c->api;
	for (unsigned int i = 0; i < API_MAX_CONNS; i++)
		if (a->conns[i] == c)
			a->conns[i] = NULL;
	(void)evloop_del(&a->vm->loop, c->fd);
	close(c->fd);
	free(c);
}

static void send_line(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

static void on_conn(void *opaque, uint32_t events)
{
	struct api_conn *c = opaque;
	(void)events;
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	char out[2048];
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (!nl)
			break;
		*nl = '\0';
		vmm_api_handle(c->api->vm, c->buf, out, sizeof(out));
		send_line(c->fd, out);
		size_t used = (size_t)(nl - c->buf) + 1;
		memmove(c->buf, nl + 1, c->len - used);
		c->len -= used;
	}
	if (c->len == sizeof(c->buf) - 1) {
		send_line(c->fd, "{\"ok\":false,\"error\":\"request line too long\"}\n");
		conn_close(c);
	}
}

static void on_accept(void *opaque, uint32_t events)
{
	struct vmm_api *a = opaque;
	(void)events;
	int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC);
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
	c->api = a;
	c->fd = fd;
	if (evloop_add(&a->vm->loop, fd, EPOLLIN, on_conn, c) < 0) {
		close(fd);
		free(c);
		return;
	}
	a->conns[slot] = c;
}

int vmm_api_create(struct vm *vm, const char *path, struct vmm_api **out, char *err, size_t errlen)
{
	*out = NULL;
	struct vmm_api *a = calloc(1, sizeof(*a));
	if (!a)
		return errf(err, errlen, -ENOMEM, "out of memory");
	a->vm = vm;
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
	mode_t old = umask(0177);
	int r = bind(a->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(a->lfd, 16) < 0 ||
	    evloop_add(&vm->loop, a->lfd, EPOLLIN, on_accept, a) < 0) {
		int e = errno;
		close(a->lfd);
		unlink(path);
		free(a);
		return errf(err, errlen, -e, "cannot listen on --api '%s': %s", path, strerror(e));
	}
	*out = a;
	return 0;
}

void vmm_api_destroy(struct vmm_api *a)
{
	if (!a)
		return;
	for (unsigned int i = 0; i < API_MAX_CONNS; i++)
		if (a->conns[i])
			conn_close(a->conns[i]);
	(void)evloop_del(&a->vm->loop, a->lfd);
	close(a->lfd);
	unlink(a->path);
	free(a);
}
