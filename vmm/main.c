/* cove-vmm: one microVM per process.  Exit status (also in docs):
 *   0  the guest reset through the i8042 (its normal way to end)
 *   1  bad input: flags, config, kernel, initrd, disk, memory size
 *   2  the guest kernel panicked
 *   3  the guest triple-faulted
 *   4  stopped by a signal (SIGTERM, SIGINT, SIGHUP)
 *   5  internal error (KVM failure or an exit cove-vmm cannot handle) */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "core/vm.h"

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
	int r = vm_create(&vm, &c.vm, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		vmm_config_free(&c);
		return 1;
	}
	r = vm_start(vm);
	if (r < 0) {
		fprintf(stderr, "cove-vmm: cannot start the VM: %s\n", strerror(-r));
		vm_destroy(vm);
		vmm_config_free(&c);
		return 5;
	}
	enum vm_exit_reason reason = vm_wait(vm);
	int status = vm_exit_status(reason);
	if (status != 0)
		fprintf(stderr, "cove-vmm: %s: %s\n", vm_exit_reason_name(reason), vm->exit_detail);
	vm_destroy(vm);
	vmm_config_free(&c);
	return status;
}
