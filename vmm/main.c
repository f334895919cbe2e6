/* cove-vmm: one microVM per process.  Exit status (also in docs):
 *   0  the guest reset through the i8042 (its normal way to end)
 *   1  bad input: flags, config, kernel, initrd, disk, memory size
 *   2  the guest kernel panicked
 *   3  the guest triple-faulted
 *   4  stopped by a signal (SIGTERM, SIGINT, SIGHUP)
 *   5  internal error (KVM failure or an exit cove-vmm cannot handle)
 *   6  the VM reached its --ttl deadline ("deadline") */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "core/vm.h"
#include "snapshot/snapshot.h"

int main(int argc, char **argv)
{
	struct vmm_config c;
	char err[512] = "";
	if (vmm_config_parse(&c, argc, argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		vmm_config_free(&c);
		return 1;
	}
	if (c.show_help) {
		fputs(vmm_usage, stdout);
		vmm_config_free(&c);
		return 0;
	}
	struct vm *vm = NULL;
	struct snapshot *snap = NULL;
	int r;
	if (c.restore_dir) {
		r = snapshot_open(c.restore_dir, &snap, err, sizeof(err));
		if (r == 0)
			r = snapshot_vm_config(snap, c.overlay_dir, &c.vm, err, sizeof(err));
		if (r == 0)
			r = vmm_config_apply_disk_limits(&c, err, sizeof(err));
		if (r == 0 && c.vm.vsock_path && !snapshot_has_vsock(snap))
			r = -EINVAL, snprintf(err, sizeof(err), "the snapshot has no vsock device");
		if (r == 0 && !c.vm.vsock_path && snapshot_has_vsock(snap))
			r = -EINVAL, snprintf(err, sizeof(err),
			                      "the snapshot has a vsock device: give --vsock PATH");
		if (r == 0)
			r = vm_restore(&vm, &c.vm, snap, err, sizeof(err));
	} else {
		r = vm_create(&vm, &c.vm, err, sizeof(err));
	}
	struct vmm_api *api = NULL;
	if (r == 0 && c.api_path)
		r = vmm_api_create(vm, c.api_path, &api, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		vmm_api_destroy(api);
		vm_destroy(vm);
		snapshot_close(snap);
		vmm_config_free(&c);
		return 1;
	}
	r = vm_start(vm);
	if (r < 0) {
		fprintf(stderr, "cove-vmm: cannot start the VM: %s\n", strerror(-r));
		evloop_stop(&vm->loop);
		vmm_api_destroy(api);
		vm_destroy(vm);
		snapshot_close(snap);
		vmm_config_free(&c);
		return 5;
	}
	enum vm_exit_reason reason = vm_wait(vm);
	int status = vm_exit_status(reason);
	if (status != 0)
		fprintf(stderr, "cove-vmm: %s: %s\n", vm_exit_reason_name(reason), vm->exit_detail);
	evloop_stop(&vm->loop); /* the API's watches go before the loop does */
	vmm_api_destroy(api);
	vm_destroy(vm);
	snapshot_close(snap);
	vmm_config_free(&c);
	return status;
}
