/* The data of one microVM: struct vm owns everything of it (the KVM fds,
 * guest memory, the vCPUs and their threads, the I/O buses, the I/O loop
 * and every device; there are no per-VM globals), and struct vm_config
 * says what to build.  Types only: the functions are core/vm.h's (build,
 * start, wait, destroy), core/vm_state.h's (pause, resume, stop),
 * core/vcpu.h's and core/vm_devices.h's. */
#ifndef COVE_MACHINE_H
#define COVE_MACHINE_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bus.h"
#include "base/evloop.h"
#include "base/guest_mem.h"
#include "core/exit_hist.h"
#include "cove_limits.h"
#include "devices/boot_timer.h"
#include "devices/i8042.h"
#include "devices/serial.h"

#define VM_MAX_VCPUS       64
#define VM_EXIT_DETAIL_LEN 384                /* one line: why the VM stopped */
#define VM_MAX_DISKS       12                 /* leaves GSIs for vsock, net and rng */
#define VM_MAX_DEVICES     (VM_MAX_DISKS + 4) /* virtio devices: disks, vsock, rng, net */

/* A console file is kept under this many bytes unless told otherwise
 * (--console-max): past it, the older half is dropped. */
#define VM_CONSOLE_MAX_DEFAULT (1ULL << 20)
#define VM_CONSOLE_MAX_MIN     (64ULL << 10) /* room for the rotation to keep whole lines */

enum vm_state { VM_CREATED, VM_RUNNING, VM_PAUSED, VM_STOPPED };

/* Why a VM stopped; cove-vmm's exit status derives from it (vm_exit_status). */
enum vm_exit_reason {
	VM_EXIT_NONE = 0,
	VM_EXIT_RESET,        /* the guest reset through the i8042: a clean end */
	VM_EXIT_PANIC,        /* the guest kernel panicked */
	VM_EXIT_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	VM_EXIT_INTERNAL,     /* KVM or VMM failure, or an exit we cannot handle */
	VM_EXIT_SIGNAL,       /* the host asked us to stop (SIGTERM, SIGINT) */
	VM_EXIT_DEADLINE,     /* the VM reached its --ttl */
};

struct vm_disk_config {
	const char *path;
	bool read_only;
	char id[21];        /* virtio-blk serial: 20 bytes + NUL */
	const char *format; /* "raw", "qcow2", or NULL: probed (trust the image only
	                       if no guest wrote it raw: a guest-written qcow2
	                       header could name any host file as backing) */
	/* Host-side limits (0: none): token buckets on the device's requests
	 * (bytes/s over reads and writes, requests/s; bursts 0: a tenth of a
	 * second's worth), and the most bytes the image file may grow to
	 * (qcow2; a write that needs more fails with an I/O error). */
	uint64_t bps, bps_burst, iops, iops_burst;
	uint64_t max_file;
};

enum vm_console { VM_CONSOLE_STDIO, VM_CONSOLE_FILE, VM_CONSOLE_NONE };

/* The NIC (--net): a TAP inherited as fd, or opened by name; its MAC and
 * rate limits (rates 0: unlimited; bursts are one-time extra tokens). */
struct vm_net_config {
	bool enabled;
	int fd;               /* >= 0: an inherited TAP fd */
	const char *tap_name; /* else: the TAP interface to open */
	uint8_t mac[6];
	bool mac_set; /* else VNET_DEFAULT_MAC (or, restored, the snapshot's) */
	uint64_t rx_bps, rx_bps_burst, rx_pps, rx_pps_burst;
	uint64_t tx_bps, tx_bps_burst, tx_pps, tx_pps_burst;
};

struct vm_config {
	const char *kernel;
	const char *initrd;  /* NULL: none */
	const char *cmdline; /* appended to Cove's defaults; NULL: none */
	unsigned int cpus;
	uint64_t memory_mib;
	struct vm_disk_config disks[VM_MAX_DISKS];
	unsigned int ndisks;
	enum vm_console console;
	const char *console_path;
	const char *vsock_path; /* NULL: no vsock device */
	uint64_t vsock_cid;     /* 0: the default (3) */
	uint64_t ttl_s;       /* stop with VM_EXIT_DEADLINE this long after vm_start(); 0: never */
	uint64_t console_max; /* cap on a console file's size; 0: VM_CONSOLE_MAX_DEFAULT */
	struct vm_net_config net;
	/* A VM from vm_prepare() (cove-vmm --pool) that vm_build fills in
	 * instead of creating one: its KVM VM, irqchip, vCPUs and I/O loop
	 * exist, no guest memory.  NULL: a new VM.  vm_create, vm_restore and
	 * vm_build take it over (free it on failure); cpus must match. */
	struct vm *prepared;
};

struct vm;

struct vcpu {
	struct vm *vm;
	unsigned int index;
	int fd;
	int stats_fd; /* KVM_GET_STATS_FD, opened before the vCPU runs; -1 if none */
	struct kvm_run *run;
	pthread_t thread;
	bool thread_started;
	bool parked;           /* guarded by vm->lock */
	struct exit_hist hist; /* PIO and MMIO exits by address */
};

struct disk;
struct tap;
struct vm_device_type;

/* One virtio device of a VM: its row of the device table
 * (core/vm_devices.h), the device, and which one of its type it is. */
struct vm_device {
	const struct vm_device_type *type;
	void *dev;
	unsigned int index;
};

struct vm {
	int kvm_fd;
	int vm_fd;
	size_t run_size;
	struct guest_mem mem;
	struct bus pio;
	struct bus mmio;
	struct evloop loop;
	unsigned int ncpus;
	struct vcpu vcpus[VM_MAX_VCPUS];
	struct kvm_cpuid2 *cpuid; /* what KVM supports; patched per vCPU */

	/* Lifecycle, guarded by lock; cond signals every change. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum vm_state state;
	bool pause_requested;
	bool stop_requested;
	unsigned int parked;
	enum vm_exit_reason exit_reason;
	char exit_detail[VM_EXIT_DETAIL_LEN];
	bool guest_panicked; /* the console showed a kernel panic */
	char panic_msg[128];

	/* Devices. */
	struct serial serial;
	bool serial_ready;
	int serial_irqfd;
	int console_in_fd;  /* -1: no console input */
	int console_out_fd; /* -1: output discarded */
	bool console_out_owned;
	struct i8042 i8042;
	bool i8042_ready;
	struct boot_timer boot_timer;
	/* Phase times in microseconds since process start (boot_timer_now_us),
	 * 0 until reached: what `cove bench` reports. */
	uint64_t t_created_us;
	uint64_t t_first_run_us;                  /* vCPU 0 enters KVM_RUN for the first time */
	struct disk *disk_backends[VM_MAX_DISKS]; /* opened, not yet given to a device */
	char *disk_paths[VM_MAX_DISKS];           /* as configured; a snapshot moves them */
	unsigned int ndisks;                      /* disks opened */
	uint64_t vsock_cid;
	struct tap *net_backend; /* opened, not yet given to the device */
	/* The virtio devices in slot order, as the device table
	 * (core/vm_devices.h) made them. */
	struct vm_device devs[VM_MAX_DEVICES];
	unsigned int ndevs;
	int signal_fd;
	/* The vCPU threads' seccomp filter (base/seccomp.h); OFF after
	 * vm_create(), set it before vm_start(). */
	enum vmm_seccomp_mode seccomp;
	int ttl_fd; /* timerfd of the --ttl deadline on the I/O loop; -1: none */
	/* The jail's root ("/" once pivoted), for what a snapshot opens by
	 * name (the writable disks): -1 when not jailed. */
	int root_fd;
	uint64_t ttl_s;
	int console_flush_fd; /* timerfd that flushes a partial console line; -1: none */
	/* A pooled VM (vm_prepare): the moment its start request arrived, in
	 * the same clock as the phase times above; 0: not pooled. */
	uint64_t t_request_us;
	bool prepared; /* vm_prepare made it; vm_build has not filled it yet */
};

#endif
