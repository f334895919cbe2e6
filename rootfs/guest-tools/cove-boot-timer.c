/* cove-boot-timer: tells cove-vmm that the guest's init has started by
 * writing the boot-timer magic to its I/O port (vmm/devices/boot_timer.h).
 * Freestanding (no libc) so it costs one tiny exec at boot.  Under another
 * VMM the port is unassigned and the write is ignored. */
#include "boot_timer_abi.h"

#define SYS_exit   60
#define SYS_ioperm 173

static long syscall3(long n, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(n), "D"(a), "S"(b), "d"(c)
	                 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noreturn)) void _start(void)
{
	long r = syscall3(SYS_ioperm, BOOT_TIMER_PORT, 1, 1);
	if (r == 0) {
		unsigned char v = BOOT_TIMER_MAGIC;
		unsigned short port = BOOT_TIMER_PORT;
		__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
	}
	syscall3(SYS_exit, r == 0 ? 0 : 1, 0, 0);
	__builtin_unreachable();
}
