/* Unit tests: the vCPU exit decision (fabricated kvm_run structs), the
 * serial port, the i8042 reset line, and cove-vmm's configuration. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_flags.h"
#include "core/vcpu.h"
#include "core/vcpu_exit.h"
#include "core/vm.h"
#include "devices/i8042.h"
#include "devices/serial.h"
#include "unit.h"

/* A struct vm with only what vcpu_handle_exit touches. */
static struct vm *test_vm(void)
{
	static struct vm vm;
	memset(&vm, 0, sizeof(vm));
	pthread_mutex_init(&vm.lock, NULL);
	pthread_cond_init(&vm.cond, NULL);
	return &vm;
}

struct port_log {
	uint8_t bytes[64];
	unsigned n;
};

static void port_sink(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct port_log *l = opaque;
	(void)offset;
	if (is_write && l->n + len <= sizeof(l->bytes)) {
		memcpy(l->bytes + l->n, data, len);
		l->n += len;
	} else if (!is_write) {
		data[0] = 0x5a;
	}
}

/* kvm_run followed by its I/O data area, as KVM lays it out. */
struct fake_run {
	struct kvm_run run;
	uint8_t data[64];
};

START_TEST(exit_io_string_and_bounds)
{
	struct vm *vm = test_vm();
	struct port_log log = { 0 };
	ck_assert_int_eq(bus_register(&vm->pio, 0x3f8, 8, port_sink, &log, "sink"), 0);
	struct fake_run fr;
	memset(&fr, 0, sizeof(fr));
	fr.run.exit_reason = KVM_EXIT_IO;
	fr.run.io.direction = KVM_EXIT_IO_OUT;
	fr.run.io.port = 0x3f8;
	fr.run.io.size = 1;
	fr.run.io.count = 3; /* rep outsb */
	fr.run.io.data_offset = sizeof(struct kvm_run);
	memcpy(fr.data, "abc", 3);
	ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_CONTINUE);
	ck_assert_uint_eq(log.n, 3);
	ck_assert(memcmp(log.bytes, "abc", 3) == 0);
	/* A data area claimed past the end of kvm_run is not touched. */
	fr.run.io.count = 1000;
	ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_CONTINUE);
	ck_assert_uint_eq(log.n, 3);
	/* Reads of unclaimed ports return zeros; claimed ones the device's. */
	fr.run.io.count = 1;
	fr.run.io.direction = KVM_EXIT_IO_IN;
	fr.run.io.port = 0x80;
	fr.data[0] = 0xff;
	ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_CONTINUE);
	ck_assert_uint_eq(fr.data[0], 0);
	fr.run.io.port = 0x3f9;
	ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_CONTINUE);
	ck_assert_uint_eq(fr.data[0], 0x5a);
}
END_TEST

START_TEST(exit_reasons_stop_with_the_right_status)
{
	static const struct {
		uint32_t exit;
		uint32_t event;
		enum vm_exit_reason reason;
		int status;
	} cases[] = {
		{ KVM_EXIT_SHUTDOWN, 0, VM_EXIT_TRIPLE_FAULT, 3 },
		{ KVM_EXIT_INTERNAL_ERROR, 0, VM_EXIT_INTERNAL, 5 },
		{ KVM_EXIT_FAIL_ENTRY, 0, VM_EXIT_INTERNAL, 5 },
		{ KVM_EXIT_SYSTEM_EVENT, KVM_SYSTEM_EVENT_RESET, VM_EXIT_RESET, 0 },
		{ KVM_EXIT_SYSTEM_EVENT, KVM_SYSTEM_EVENT_CRASH, VM_EXIT_PANIC, 2 },
		{ KVM_EXIT_HYPERCALL, 0, VM_EXIT_INTERNAL, 5 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vm *vm = test_vm();
		struct fake_run fr;
		memset(&fr, 0, sizeof(fr));
		fr.run.exit_reason = cases[i].exit;
		fr.run.system_event.type = cases[i].event;
		ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_STOP);
		ck_assert_int_eq(vm->exit_reason, cases[i].reason);
		ck_assert_int_eq(vm_exit_status(vm->exit_reason), cases[i].status);
	}
	/* The first reason wins. */
	struct vm *vm = test_vm();
	vm_request_stop(vm, VM_EXIT_RESET, "first");
	vm_request_stop(vm, VM_EXIT_INTERNAL, "second");
	ck_assert_int_eq(vm->exit_reason, VM_EXIT_RESET);
	ck_assert_str_eq(vm->exit_detail, "first");
	/* A reset after a panic is reported as the panic. */
	vm = test_vm();
	vm->guest_panicked = true;
	strcpy(vm->panic_msg, "VFS: Unable to mount root fs");
	vm_guest_reset(vm, "i8042");
	ck_assert_int_eq(vm->exit_reason, VM_EXIT_PANIC);
	ck_assert_str_eq(vm->exit_detail, "VFS: Unable to mount root fs");
}
END_TEST

START_TEST(exit_mmio_dispatch)
{
	struct vm *vm = test_vm();
	struct port_log log = { 0 };
	ck_assert_int_eq(bus_register(&vm->mmio, 0xd0000000, 0x1000, port_sink, &log, "m"), 0);
	struct fake_run fr;
	memset(&fr, 0, sizeof(fr));
	fr.run.exit_reason = KVM_EXIT_MMIO;
	fr.run.mmio.phys_addr = 0xd0000010;
	fr.run.mmio.len = 4;
	fr.run.mmio.is_write = 1;
	memcpy(fr.run.mmio.data, "wxyz", 4);
	ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_CONTINUE);
	ck_assert_uint_eq(log.n, 4);
	fr.run.mmio.len = 9; /* more than the data field holds: ignored */
	ck_assert_int_eq(vcpu_handle_exit(vm, &fr.run, sizeof(fr), NULL), VCPU_CONTINUE);
	ck_assert_uint_eq(log.n, 4);
}
END_TEST

/* The pure decision alone: what each exit means, no VM involved. */
START_TEST(exit_decision_is_pure)
{
	struct fake_run fr;
	struct vcpu_exit x;
	memset(&fr, 0, sizeof(fr));
	fr.run.exit_reason = KVM_EXIT_IO;
	fr.run.io.direction = KVM_EXIT_IO_IN;
	fr.run.io.port = 0x60;
	fr.run.io.size = 2;
	fr.run.io.count = 4;
	fr.run.io.data_offset = offsetof(struct fake_run, data);
	vcpu_decide(&fr.run, sizeof(fr), &x);
	ck_assert_int_eq(x.kind, VCPU_EXIT_PIO);
	ck_assert_uint_eq(x.addr, 0x60);
	ck_assert_ptr_eq(x.data, fr.data);
	ck_assert_uint_eq(x.size, 2);
	ck_assert_uint_eq(x.count, 4);
	ck_assert(!x.is_write);
	/* The data area would run past the mapping: ignored, not trusted. */
	fr.run.io.count = 33;
	vcpu_decide(&fr.run, sizeof(fr), &x);
	ck_assert_int_eq(x.kind, VCPU_EXIT_RESUME);
	fr.run.io.count = 1;
	fr.run.io.data_offset = sizeof(fr) + 1;
	vcpu_decide(&fr.run, sizeof(fr), &x);
	ck_assert_int_eq(x.kind, VCPU_EXIT_RESUME);
	fr.run.io.data_offset = offsetof(struct fake_run, data);
	fr.run.io.size = 8; /* port I/O is at most 4 bytes */
	vcpu_decide(&fr.run, sizeof(fr), &x);
	ck_assert_int_eq(x.kind, VCPU_EXIT_RESUME);

	memset(&fr, 0, sizeof(fr));
	fr.run.exit_reason = KVM_EXIT_MMIO;
	fr.run.mmio.phys_addr = 0xd0000200;
	fr.run.mmio.len = 8;
	fr.run.mmio.is_write = 1;
	vcpu_decide(&fr.run, sizeof(fr), &x);
	ck_assert_int_eq(x.kind, VCPU_EXIT_MMIO);
	ck_assert_uint_eq(x.addr, 0xd0000200);
	ck_assert_ptr_eq(x.data, fr.run.mmio.data);
	ck_assert(x.is_write && x.size == 8 && x.count == 1);

	static const struct {
		uint32_t exit, event;
		enum vcpu_exit_kind kind;
		const char *detail;
	} cases[] = {
		{ KVM_EXIT_INTR, 0, VCPU_EXIT_RESUME, "" },
		{ KVM_EXIT_SHUTDOWN, 0, VCPU_EXIT_TRIPLE_FAULT, "triple fault" },
		{ KVM_EXIT_SYSTEM_EVENT, KVM_SYSTEM_EVENT_SHUTDOWN, VCPU_EXIT_RESET,
		  "system event" },
		{ KVM_EXIT_SYSTEM_EVENT, KVM_SYSTEM_EVENT_CRASH, VCPU_EXIT_PANIC, "crash" },
		{ KVM_EXIT_SYSTEM_EVENT, 77, VCPU_EXIT_FAIL, "unknown system event 77" },
		{ KVM_EXIT_FAIL_ENTRY, 0, VCPU_EXIT_FAIL, "VM entry failed" },
		{ KVM_EXIT_INTERNAL_ERROR, 0, VCPU_EXIT_INTERNAL, "KVM internal error" },
		{ 999, 0, VCPU_EXIT_FAIL, "unhandled KVM exit 999" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&fr, 0, sizeof(fr));
		fr.run.exit_reason = cases[i].exit;
		fr.run.system_event.type = cases[i].event; /* also internal.suberror */
		vcpu_decide(&fr.run, sizeof(fr), &x);
		ck_assert_int_eq(x.kind, cases[i].kind);
		ck_assert_ptr_nonnull(strstr(x.detail, cases[i].detail));
	}
	/* The suberror is named. */
	memset(&fr, 0, sizeof(fr));
	fr.run.exit_reason = KVM_EXIT_INTERNAL_ERROR;
	fr.run.internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
	vcpu_decide(&fr.run, sizeof(fr), &x);
	ck_assert_str_eq(x.detail, "instruction emulation failed (KVM internal error)");
}
END_TEST

struct serial_probe {
	int irqs;
	char panic[128];
};

static void s_irq(void *opaque)
{
	((struct serial_probe *)opaque)->irqs++;
}

static void s_panic(void *opaque, const char *msg)
{
	snprintf(((struct serial_probe *)opaque)->panic, 128, "%s", msg);
}

static uint8_t uart(struct serial *u, uint64_t off, int write, uint8_t v)
{
	serial_io(u, off, &v, 1, write);
	return v;
}

START_TEST(serial_output_input_and_panic)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	struct serial u;
	struct serial_probe probe = { 0 };
	serial_init(&u, p[1], s_irq, s_panic, &probe);
	const char *msg = "x Kernel panic - not syncing: VFS: no root\n";
	for (const char *c = msg; *c; c++)
		uart(&u, 0, 1, (uint8_t)*c);
	char out[64] = { 0 };
	ck_assert_int_eq(read(p[0], out, sizeof(out)), (int)strlen(msg));
	ck_assert_str_eq(out, msg);
	ck_assert_str_eq(probe.panic, "VFS: no root");
	ck_assert_int_eq(probe.irqs, 0); /* interrupts are off */
	/* LSR: transmitter empty; input sets DR and raises RDI when enabled. */
	ck_assert_uint_eq(uart(&u, 5, 0, 0) & 0x60, 0x60);
	uart(&u, 1, 1, 0x01); /* IER: RDI */
	ck_assert_uint_eq(serial_input(&u, (const uint8_t *)"hi", 2), 2);
	ck_assert_int_eq(probe.irqs, 1);
	ck_assert_uint_eq(uart(&u, 2, 0, 0) & 0x0f, 0x04); /* IIR: RDI */
	ck_assert_uint_eq(uart(&u, 0, 0, 0), 'h');
	ck_assert_uint_eq(uart(&u, 0, 0, 0), 'i');
	ck_assert_uint_eq(uart(&u, 5, 0, 0) & 0x01, 0);
	ck_assert_uint_eq(uart(&u, 2, 0, 0) & 0x0f, 0x01); /* no interrupt */
	/* The divisor latch does not disturb data. */
	uart(&u, 3, 1, 0x80);
	uart(&u, 0, 1, 0x01);
	ck_assert_uint_eq(uart(&u, 0, 0, 0), 0x01);
	uart(&u, 3, 1, 0x03);
	/* THRI fires on enable and after each byte; reading IIR acks it. */
	uart(&u, 1, 1, 0x03);
	ck_assert_int_eq(probe.irqs, 2);
	ck_assert_uint_eq(uart(&u, 2, 0, 0) & 0x0f, 0x02);
	ck_assert_uint_eq(uart(&u, 2, 0, 0) & 0x0f, 0x01);
	uart(&u, 0, 1, 'z');
	ck_assert_int_eq(probe.irqs, 3);
	/* Overrun: a full FIFO drops input and flags OE. */
	static uint8_t big[SERIAL_FIFO_SIZE + 10];
	ck_assert_uint_eq(serial_input(&u, big, sizeof(big)), SERIAL_FIFO_SIZE);
	ck_assert_uint_eq(uart(&u, 5, 0, 0) & 0x02, 0x02);
	ck_assert_uint_eq(uart(&u, 5, 0, 0) & 0x02, 0);
	/* Wide and out-of-range accesses are ignored. */
	uint8_t wide[4] = { 0 };
	serial_io(&u, 0, wide, 4, true);
	serial_io(&u, 9, wide, 1, true);
	serial_destroy(&u);
	close(p[0]);
	close(p[1]);
}
END_TEST

static void k_reset(void *opaque)
{
	(*(int *)opaque)++;
}

START_TEST(i8042_reset_paths)
{
	struct i8042 k;
	int resets = 0;
	i8042_init(&k, k_reset, &resets);
	uint8_t v = 0xaa; /* self test answers 0x55 */
	i8042_cmd_io(&k, 0, &v, 1, true);
	i8042_cmd_io(&k, 0, &v, 1, false);
	ck_assert_uint_eq(v & 1, 1);
	i8042_data_io(&k, 0, &v, 1, false);
	ck_assert_uint_eq(v, 0x55);
	v = 0xfe; /* pulse reset */
	i8042_cmd_io(&k, 0, &v, 1, true);
	ck_assert_int_eq(resets, 1);
	v = 0xd1; /* write output port with bit 0 clear: reset */
	i8042_cmd_io(&k, 0, &v, 1, true);
	v = 0x00;
	i8042_data_io(&k, 0, &v, 1, true);
	ck_assert_int_eq(resets, 2);
	v = 0xd1; /* bit 0 set: no reset */
	i8042_cmd_io(&k, 0, &v, 1, true);
	v = 0x01;
	i8042_data_io(&k, 0, &v, 1, true);
	ck_assert_int_eq(resets, 2);
	i8042_destroy(&k);
}
END_TEST

static int parse(struct vmm_config *c, char *err, const char *a0, ...)
{
	char *argv[16] = { "cove-vmm" };
	int argc = 1;
	va_list ap;
	va_start(ap, a0);
	for (const char *a = a0; a && argc < 15; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	int r = vmm_config_parse(c, argc, argv, err, 256);
	return r;
}

START_TEST(config_flags)
{
	struct vmm_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, err, "--kernel", "k", "--cpus", "2", "--memory", "512", "--disk",
	                       "a.img,ro,id=root", "--disk", "b.img,format=qcow2", "--console",
	                       "none", NULL),
	                 0);
	ck_assert_str_eq(c.vm.kernel, "k");
	ck_assert_uint_eq(c.vm.cpus, 2);
	ck_assert_uint_eq(c.vm.memory_mib, 512);
	ck_assert_uint_eq(c.vm.ndisks, 2);
	ck_assert(c.vm.disks[0].read_only);
	ck_assert_str_eq(c.vm.disks[0].id, "root");
	ck_assert_str_eq(c.vm.disks[1].path, "b.img");
	ck_assert(!c.vm.disks[1].read_only);
	ck_assert_ptr_null(c.vm.disks[0].format);
	ck_assert_str_eq(c.vm.disks[1].format, "qcow2");
	ck_assert_int_eq(c.vm.console, VM_CONSOLE_NONE);
	vmm_config_free(&c);

	/* --restore: the snapshot decides the machine. */
	ck_assert_int_eq(
	    parse(&c, err, "--restore", "/s", "--overlay-dir", "/o", "--api", "/a", NULL), 0);
	ck_assert_str_eq(c.restore_dir, "/s");
	ck_assert_str_eq(c.overlay_dir, "/o");
	ck_assert_str_eq(c.api_path, "/a");
	vmm_config_free(&c);
	ck_assert_int_eq(parse(&c, err, "--restore", "/s", "--memory", "512", NULL), -EINVAL);
	ck_assert(strstr(err, "--memory cannot be combined with --restore"));
	vmm_config_free(&c);
	ck_assert_int_eq(parse(&c, err, "--kernel", "k", "--overlay-dir", "/o", NULL), -EINVAL);
	ck_assert(strstr(err, "only for --restore"));
	vmm_config_free(&c);
	/* A copy of the memory file to map instead: a restore's only. */
	ck_assert_int_eq(parse(&c, err, "--restore", "/s", "--restore-memory", "/m", NULL), 0);
	ck_assert_str_eq(c.restore_memory, "/m");
	vmm_config_free(&c);
	ck_assert_int_eq(parse(&c, err, "--kernel", "k", "--restore-memory", "/m", NULL), -EINVAL);
	ck_assert(strstr(err, "--restore-memory is only for --restore"));
	vmm_config_free(&c);
	ck_assert_int_eq(parse(&c, err, "--restore", "/s", "--restore-memory", "", NULL), -EINVAL);
	vmm_config_free(&c);

	static const struct {
		const char *a, *b;
		const char *want;
	} bad[] = {
		{ "--cpus", "0", "--cpus" },           { "--cpus", "x", "--cpus" },
		{ "--cpus", "65", "--cpus" },          { "--memory", "-1", "--memory" },
		{ "--memory", "12k", "--memory" },     { "--disk", "a,bogus", "bogus" },
		{ "--disk", "a,format=vmdk", "vmdk" }, { "--api", "", "--api" },
		{ "--frob", NULL, "unknown option" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(parse(&c, err, "--kernel", "k", bad[i].a, bad[i].b, NULL),
		                 -EINVAL);
		ck_assert_msg(strstr(err, bad[i].want), "'%s' lacks '%s'", err, bad[i].want);
		ck_assert_ptr_null(strchr(err, '\n'));
		vmm_config_free(&c);
	}
	ck_assert_int_eq(parse(&c, err, "--cpus", "1", NULL), -EINVAL);
	ck_assert(strstr(err, "no kernel"));
	vmm_config_free(&c);
	ck_assert_int_eq(parse(&c, err, "--kernel", NULL), -EINVAL);
	ck_assert(strstr(err, "needs a value"));
	vmm_config_free(&c);
}
END_TEST

START_TEST(config_net)
{
	struct vmm_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, err, "--kernel", "k", "--net",
	                       "tap=tap0,mac=06:00:AC:10:00:09,rx_bps=1000,rx_bps_burst=5,"
	                       "rx_pps=10,rx_pps_burst=2,tx_bps=2000,tx_bps_burst=6,tx_pps=20,"
	                       "tx_pps_burst=3",
	                       NULL),
	                 0);
	const struct vm_net_config *n = &c.vm.net;
	ck_assert(n->enabled);
	ck_assert_str_eq(n->tap_name, "tap0");
	ck_assert_int_eq(n->fd, -1);
	ck_assert(n->mac_set);
	static const uint8_t mac[6] = { 0x06, 0x00, 0xac, 0x10, 0x00, 0x09 };
	ck_assert_mem_eq(n->mac, mac, 6);
	ck_assert_uint_eq(n->rx_bps, 1000);
	ck_assert_uint_eq(n->rx_bps_burst, 5);
	ck_assert_uint_eq(n->rx_pps, 10);
	ck_assert_uint_eq(n->rx_pps_burst, 2);
	ck_assert_uint_eq(n->tx_bps, 2000);
	ck_assert_uint_eq(n->tx_bps_burst, 6);
	ck_assert_uint_eq(n->tx_pps, 20);
	ck_assert_uint_eq(n->tx_pps_burst, 3);
	vmm_config_free(&c);
	/* Allowed with --restore: the TAP is new, the MAC the snapshot's. */
	ck_assert_int_eq(parse(&c, err, "--restore", "/s", "--net", "fd=3,tx_bps=5", NULL), 0);
	ck_assert_int_eq(c.vm.net.fd, 3);
	ck_assert(!c.vm.net.mac_set);
	ck_assert_uint_eq(c.vm.net.tx_bps, 5);
	vmm_config_free(&c);

	static const struct {
		const char *v, *want;
	} bad[] = {
		{ "", "fd=N" },
		{ "mac=06:00:00:00:00:01", "fd=N" },
		{ "fd=x", "fd=" },
		{ "fd=-1", "fd=" },
		{ "tap=", "tap=" },
		{ "tap=a-very-long-interface", "tap=" },
		{ "fd=3,mac=01:00:00:00:00:00", "unicast" },
		{ "fd=3,mac=06:00:00:00:00", "mac=" },
		{ "fd=3,mac=06:00:00:00:00:0g", "mac=" },
		{ "fd=3,rx_bps=1k", "rx_bps=" },
		{ "fd=3,tx_pps=-1", "tx_pps=" },
		{ "fd=3,speed=1", "unknown --net option 'speed'" },
		{ "fd=3,ro", "bad --net option 'ro'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(parse(&c, err, "--kernel", "k", "--net", bad[i].v, NULL), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].want), "'%s' lacks '%s'", err, bad[i].want);
		ck_assert_ptr_null(strchr(err, '\n'));
		vmm_config_free(&c);
	}
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(config_json)
{
	char path[] = "/tmp/cove-config-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	struct vmm_config c;
	char err[256];
	write_file(path, "{\"kernel\": \"vmlinux\", \"cpus\": 4, \"memory\": 1024,"
	                 " \"disks\": [{\"path\": \"r.img\", \"read_only\": true}],"
	                 " \"cmdline\": \"quiet\", \"console\": \"out.log\"}");
	ck_assert_int_eq(parse(&c, err, "--config", path, "--cpus", "2", NULL), 0);
	ck_assert_str_eq(c.vm.kernel, "vmlinux");
	ck_assert_uint_eq(c.vm.cpus, 2); /* the later flag wins */
	ck_assert_uint_eq(c.vm.memory_mib, 1024);
	ck_assert(c.vm.disks[0].read_only);
	ck_assert_int_eq(c.vm.console, VM_CONSOLE_FILE);
	ck_assert_str_eq(c.vm.console_path, "out.log");
	vmm_config_free(&c);
	write_file(path, "{\"kernel\": \"k\", \"net\": {\"fd\": 3, \"mac\": "
	                 "\"06:00:ac:10:00:07\", \"rx_pps\": 100, \"tx_bps_burst\": 9}}");
	ck_assert_int_eq(parse(&c, err, "--config", path, NULL), 0);
	ck_assert(c.vm.net.enabled);
	ck_assert_int_eq(c.vm.net.fd, 3);
	ck_assert_uint_eq(c.vm.net.mac[5], 7);
	ck_assert_uint_eq(c.vm.net.rx_pps, 100);
	ck_assert_uint_eq(c.vm.net.tx_bps_burst, 9);
	vmm_config_free(&c);

	static const char *const bad[][2] = {
		{ "{\"kernel\": \"k\", \"kernal\": 1}", "unknown key 'kernal'" },
		{ "{\"kernel\": 5}", "'kernel' must be a string" },
		{ "{\"kernel\": \"k\", \"cpus\": -2}", "'cpus'" },
		{ "{\"kernel\": \"k\", \"disks\": [{\"path\": \"a\", \"size\": 1}]}",
		  "disks[].size" },
		{ "{\"kernel\": \"k\",", "line" },
		{ "[1]", "top level" },
		{ "{\"kernel\": \"k\", \"net\": {\"fd\": 3, \"speed\": 1}}", "net.speed" },
		{ "{\"kernel\": \"k\", \"net\": {\"mac\": \"06:00:00:00:00:01\"}}", "\"fd\" or" },
		{ "{\"kernel\": \"k\", \"net\": {\"tap\": 3}}", "net.tap" },
		{ "{\"kernel\": \"k\", \"net\": 3}", "'net' must be an object" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i][0]);
		ck_assert_int_eq(parse(&c, err, "--config", path, NULL), -EINVAL);
		ck_assert_msg(strstr(err, bad[i][1]), "'%s' lacks '%s'", err, bad[i][1]);
		vmm_config_free(&c);
	}
	unlink(path);
	ck_assert_int_eq(parse(&c, err, "--config", path, NULL), -EINVAL);
	vmm_config_free(&c);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("vmm");
	TCase *tc = tcase_create("vcpu_exit");
	tcase_add_test(tc, exit_io_string_and_bounds);
	tcase_add_test(tc, exit_reasons_stop_with_the_right_status);
	tcase_add_test(tc, exit_mmio_dispatch);
	tcase_add_test(tc, exit_decision_is_pure);
	suite_add_tcase(s, tc);
	tc = tcase_create("devices");
	tcase_add_test(tc, serial_output_input_and_panic);
	tcase_add_test(tc, i8042_reset_paths);
	suite_add_tcase(s, tc);
	tc = tcase_create("config");
	tcase_add_test(tc, config_flags);
	tcase_add_test(tc, config_json);
	tcase_add_test(tc, config_net);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
