/* The boot timer's guest ABI: when its init starts, the guest agent
 * (guest-agent/sys.c) writes the byte BOOT_TIMER_MAGIC to the I/O port
 * BOOT_TIMER_PORT, and cove-vmm's device (vmm/devices/boot_timer.c) logs
 * how long after its own start that came.  The two sides share only these
 * constants: the agent sees nothing of vmm/. */
#ifndef COVE_BOOT_TIMER_ABI_H
#define COVE_BOOT_TIMER_ABI_H

#define BOOT_TIMER_PORT  0x440
#define BOOT_TIMER_MAGIC 123

#endif
