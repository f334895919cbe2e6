/* cove-vmm: one microVM per process.  Exit status (also in docs):
 *   0  the guest reset through the i8042 (its normal way to end)
 *   1  bad input: flags, config, kernel, initrd, disk, memory size
 *   2  the guest kernel panicked
 *   3  the guest triple-faulted
 *   4  stopped by a signal (SIGTERM, SIGINT, SIGHUP)
 *   5  internal error (KVM failure or an exit cove-vmm cannot handle)
 *   6  the VM reached its --ttl deadline ("deadline") */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api.h"
#include "base/seccomp.h"
#include "config.h"
#include "config_flags.h"
#include "core/vcpu.h"
#include "core/vm.h"
#include "core/vm_devices.h"
#include "devices/boot_timer.h"
#include "errf.h"
#include "jail/jail.h"
#include "pool.h"
#include "sanitize.h"
#include "snapshot/snapshot.h"

/* Builds the VM c describes (into prepared when pooled), confines the
 * process and runs the guest until it stops; api is the pooled VMM's
 * control socket (else made here from --api), req its start request (its
 * owner is answered once the guest runs).  Frees c; returns the exit
 * status. */
static int run(struct vmm_config *c, struct vm *prepared, struct vmm_api *api,
               struct vmm_pool_req *req)
{
	struct vm *vm = NULL;
	struct snapshot *snap = NULL;
	char err[512] = "";
	int r;
	/* A pooled VM goes into vm_restore/vm_create, which take it over. */
	bool handed = false;
	c->vm.prepared = prepared;
	if (c->restore_dir) {
		r = snapshot_open(c->restore_dir, c->restore_memory, &snap, err, sizeof(err));
		if (r == 0)
			r = snapshot_vm_config(snap, c->overlay_dir, &c->vm, err, sizeof(err));
		if (r == 0)
			r = vmm_config_apply_disk_limits(c, err, sizeof(err));
		if (r == 0 && c->vm.vsock_path && !snapshot_has_vsock(snap))
			r = -EINVAL, snprintf(err, sizeof(err), "the snapshot has no vsock device");
		if (r == 0 && !c->vm.vsock_path && snapshot_has_vsock(snap))
			r = -EINVAL, snprintf(err, sizeof(err),
			                      "the snapshot has a vsock device: give --vsock PATH");
		if (r == 0)
			r = snapshot_devices_config(snap, &c->vm, err, sizeof(err));
		boot_phase("snapshot_opened");
		if (r == 0) {
			handed = true;
			r = vm_restore(&vm, &c->vm, snap, err, sizeof(err));
		}
	} else {
		handed = true;
		r = vm_create(&vm, &c->vm, err, sizeof(err));
	}
	if (!handed)
		vm_destroy(prepared);
	if (r == 0 && c->api_path && !api)
		r = vmm_api_create(vm, c->api_path, &api, err, sizeof(err));
	/* Everything is open: confine the process before any thread runs. */
	if (r == 0 && c->jail.root)
		r = vm_enter_root(vm, c->jail.root, err, sizeof(err));
	boot_phase("api_and_root");
	char jailed[512];
	if (r == 0)
		r = jail_enter(&c->jail, jailed, sizeof(jailed), err, sizeof(err));
	boot_phase("jailed");
	if (r == 0)
		fprintf(stderr, "cove-vmm: jail: %s\n", jailed);
	if (r == 0 && c->jail.root) {
		/* Opened before any filter: the jail's root, for a snapshot's
		 * copies of the disks; the API thread may then open nothing by
		 * path. */
		vm->root_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (vm->root_fd < 0)
			r = -errno, snprintf(err, sizeof(err), "jail: cannot open its root: %s",
			                     strerror(errno));
		vmm_seccomp_set_jailed(true);
	}
	if (r < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		if (req)
			vmm_pool_reply(req, err);
		vmm_api_destroy(api);
		vm_destroy(vm);
		snapshot_close(snap);
		vmm_config_free(c);
		return 1;
	}
	/* Every thread installs its own filter as it starts; the main thread
	 * last, once all exist (a thread inherits its creator's filter). */
	vm->seccomp = vm->loop.seccomp = c->seccomp;
	/* The last phase recorded before any thread starts (boot_timer.h):
	 * the jail's root fd and filters chosen; threads come next. */
	boot_phase("confined");
	r = vm_start(vm);
	if (r == 0 && api)
		r = vmm_api_start(api, c->seccomp, err, sizeof(err));
	else if (r < 0)
		snprintf(err, sizeof(err), "cannot start the VM: %s", strerror(-r));
	if (req) {
		/* The owner learns the guest runs; the connection ends here
		 * (before the main filter, which has no send). */
		vmm_pool_reply(req, r < 0 ? err : NULL);
		close(req->conn);
		req->conn = -1;
	}
	if (r == 0) {
		/* The guest runs: what the restore read (the state file, its
		 * sections) is not needed any more, and the heap the start
		 * dirtied goes back to the kernel, so that a fork holds only
		 * what it keeps (malloc_trim returns free pages inside the heap
		 * too, not only at its top). */
		snapshot_close(snap);
		snap = NULL;
		malloc_trim(0);
		r = vmm_seccomp_install(VMM_THREAD_MAIN, c->seccomp, err, sizeof(err));
	}
	if (r < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		vm_request_stop(vm, VM_EXIT_INTERNAL, err);
		(void)vm_wait(vm);
		vmm_api_destroy(api);
		evloop_stop(&vm->loop);
		vm_destroy(vm);
		snapshot_close(snap);
		vmm_config_free(c);
		return 5;
	}
	enum vm_exit_reason reason = vm_wait(vm);
	int status = vm_exit_status(reason);
	if (status != 0)
		fprintf(stderr, "cove-vmm: %s: %s\n", vm_exit_reason_name(reason), vm->exit_detail);
	vmm_api_destroy(api); /* it may park the loop: it ends first */
	evloop_stop(&vm->loop);
	vm_destroy(vm);
	snapshot_close(snap);
	vmm_config_free(c);
	return status;
}

/* cove-vmm --pool CPUS --api PATH (pool.h): the KVM VM, vCPUs and I/O loop
 * now, the guest when the start request comes. */
static int pool_main(struct vmm_config *sp)
{
	char err[512] = "";
	struct vm *vm = NULL;
	struct vmm_api *api = NULL;
	unsigned int cpus = sp->pool_cpus;
	int r = vm_prepare(&vm, cpus, err, sizeof(err));
	if (r == 0)
		r = vmm_api_create(vm, sp->api_path, &api, err, sizeof(err));
	/* The filters of the mode it was spawned with, compiled while it
	 * waits (a request with another mode compiles its own at start). */
	if (r == 0)
		r = vmm_seccomp_precompile(sp->seccomp, err, sizeof(err));
	/* What the jail needs nothing of the sandbox for (a member never
	 * execs: the bounding set only matters from here on). */
	if (r == 0)
		r = jail_bound(err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "cove-vmm: pool: %s\n", err);
		vm_destroy(vm);
		vmm_config_free(sp);
		return 1;
	}
	struct vmm_pool_req req;
	r = vmm_pool_wait(vmm_api_listen_fd(api), cpus, &req, err, sizeof(err));
	struct vmm_config c;
	if (r == 0) {
		vm->t_request_us = boot_timer_now_us();
		boot_phase("pool_request");
		/* libcove (root) spawned us at nice 19, for the refill to yield
		 * to running guests: this sandbox's VMM runs at 0 (a raise an
		 * unprivileged member cannot make, nor was it lowered). */
		if (getpriority(PRIO_PROCESS, 0) > 0)
			(void)setpriority(PRIO_PROCESS, 0, 0);
		r = vmm_config_parse(&c, req.argc, req.argv, err, sizeof(err));
		if (r < 0) {
			vmm_config_free(&c);
		} else if (c.pool_cpus || c.show_help || c.show_seccomp_list) {
			vmm_config_free(&c);
			r = errf(err, sizeof(err), -EINVAL,
			         "a start request cannot ask for --pool, --help or --seccomp-list");
		} else if (c.vm.net.enabled && !c.vm.net.tap_name && req.passed < 0) {
			vmm_config_free(&c);
			r = errf(err, sizeof(err), -EINVAL,
			         "--net fd= in a start request needs the TAP passed with it");
		} else if (c.api_path && vmm_api_moved(api, vm, c.api_path) < 0) {
			vmm_config_free(&c);
			r = errf(err, sizeof(err), -ENAMETOOLONG, "--api path too long");
		}
		if (r < 0)
			vmm_pool_reply(&req, err);
	}
	if (r != 0) {
		if (r < 0)
			fprintf(stderr, "cove-vmm: pool: %s\n", err);
		vmm_pool_req_free(&req);
		vmm_api_destroy(api);
		vm_destroy(vm);
		vmm_config_free(sp);
		return r > 0 ? 0 : 1;
	}
	if (c.vm.net.enabled && !c.vm.net.tap_name) {
		/* The TAP is the fd that came with the request. */
		c.vm.net.fd = req.passed;
		req.passed = -1;
	}
	int status = run(&c, vm, api, &req);
	vmm_pool_req_free(&req);
	vmm_config_free(sp);
	return status;
}

int main(int argc, char **argv)
{
	/* One malloc arena for every thread: glibc trims a thread arena's heap
	 * only after reading /proc/sys/vm/overcommit_memory, an open the
	 * seccomp filters forbid (and one arena costs less memory). */
	mallopt(M_ARENA_MAX, 1);
	san_note_env();
	struct vmm_config c;
	char err[512] = "";
	int pr = vmm_config_parse(&c, argc, argv, err, sizeof(err));
	/* No inherited fds but the TAP we were given, no environment. */
	jail_scrub_process(pr == 0 && c.vm.net.enabled ? c.vm.net.fd : -1);
	/* Sanitizer builds: the report file, opened before the jail. */
	san_report_to_file("cove-vmm");
	if (pr < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		vmm_config_free(&c);
		return 1;
	}
	if (c.show_help || c.show_seccomp_list) {
		if (c.show_help)
			fputs(vmm_usage, stdout);
		else
			vmm_seccomp_list(stdout);
		vmm_config_free(&c);
		return 0;
	}
	vcpu_host_detect(); /* before the jail hides /proc and /sys */
	if (c.pool_cpus)
		return pool_main(&c);
	return run(&c, NULL, NULL, NULL);
}
