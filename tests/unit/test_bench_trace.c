/* Unit tests: cove bench --work's reader of tracefs lines (cli/bench_trace.c):
 * the five events it counts, the context (comm with dashes, spaces and
 * parentheses, unknown tgid, with and without the flags field), lost
 * events, headers, and lines cut or malformed anywhere refused, never read
 * past their length. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_trace.h"
#include "unit.h"

static struct trace_event ev;

static int parse(const char *line)
{
	return trace_parse_line(line, strlen(line), &ev);
}

START_TEST(syscall_line)
{
	ck_assert_int_eq(parse("        cove-vmm-4242    (   4240) [001] ..... 17284.993652: "
	                       "sys_enter: NR 16 (c, ae80, 0, 0, 0, 0)\n"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_SYSCALL);
	ck_assert_int_eq(ev.pid, 4242);
	ck_assert_int_eq(ev.tgid, 4240);
	ck_assert_uint_eq(ev.ts_us, 17284993652ULL);
	ck_assert_int_eq(ev.nr, 16);
	ck_assert_uint_eq(ev.arg1, 0xae80);
}
END_TEST

START_TEST(context_shapes)
{
	/* A comm with dashes, spaces and a '(' of its own; no flags field. */
	ck_assert_int_eq(parse(" a-b (c) -x-1-77      (     70) [000] 5.000001: sys_enter: NR 0 "
	                       "(3, 7ffd, 1, 0, 0, 0)"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_SYSCALL);
	ck_assert_int_eq(ev.pid, 77);
	ck_assert_int_eq(ev.tgid, 70);
	ck_assert_uint_eq(ev.ts_us, 5000001);
	/* The tgid not known to the trace. */
	ck_assert_int_eq(parse("           <...>-9       (-------) [003] d..1. 1.5: sys_enter: NR "
	                       "231 (0, 0, 0, 0, 0, 0)"),
	                 0);
	ck_assert_int_eq(ev.pid, 9);
	ck_assert_int_eq(ev.tgid, 0);
	ck_assert_uint_eq(ev.ts_us, 1000005);
	ck_assert_int_eq(ev.nr, 231);
}
END_TEST

START_TEST(kvm_exit_line)
{
	ck_assert_int_eq(parse("        cove-vmm-4243    (   4240) [000] d..1. 17285.000001: "
	                       "kvm_exit: vcpu 0 reason npf rip 0xffffffff81001234 info1 "
	                       "0x0000000100000004 info2 0x0000000001234000 intr_info 0x00000000 "
	                       "error_code 0x00000000"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_KVM_EXIT);
	ck_assert_str_eq(ev.reason, "npf");
	ck_assert_int_eq(ev.tgid, 4240);
	ck_assert_int_eq(parse("  x-1 (      1) [000] ..... 2.000000: kvm_exit: reason "
	                       "EXTERNAL_INTERRUPT_AND_A_VERY_LONG_NAME_BEYOND rip 0x1"),
	                 0);
	ck_assert_int_eq(strlen(ev.reason), sizeof(ev.reason) - 1);
	ck_assert_int_eq(parse("  x-1 (      1) [000] ..... 2.000000: kvm_exit: vcpu 0 reason "),
	                 -EINVAL);
	ck_assert_int_eq(parse("  x-1 (      1) [000] ..... 2.000000: kvm_exit: vcpu 0"), -EINVAL);
}
END_TEST

START_TEST(kvm_mmio_line)
{
	ck_assert_int_eq(parse("        cove-vmm-4243    (   4240) [000] d..1. 17285.000002: "
	                       "kvm_mmio: mmio write len 4 gpa 0xd0000050 val 0x1"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_KVM_MMIO);
	ck_assert_uint_eq(ev.gpa, 0xd0000050);
	ck_assert_int_eq(ev.tgid, 4240);
	ck_assert_int_eq(
	    parse("  x-1 (      1) [000] ..... 2.000000: kvm_mmio: mmio read len 4 gpa "
	          "0xd0000060 val 0x1"),
	    0);
	ck_assert_int_eq(ev.kind, TRACE_KVM_MMIO);
	/* A read on its way out is counted when it comes back. */
	ck_assert_int_eq(parse("  x-1 (      1) [000] ..... 2.000000: kvm_mmio: mmio "
	                       "unsatisfied-read len 4 gpa 0xd0000060 val 0x0"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_NONE);
	ck_assert_int_eq(
	    parse("  x-1 (      1) [000] ..... 2.000000: kvm_mmio: mmio poke len 4 gpa "
	          "0x1 val 0x0"),
	    -EINVAL);
	ck_assert_int_eq(parse("  x-1 (      1) [000] ..... 2.000000: kvm_mmio: mmio write len 4"),
	                 -EINVAL);
}
END_TEST

START_TEST(fork_and_exec)
{
	ck_assert_int_eq(parse("            cove-100     (    100) [001] ..... 3.000010: "
	                       "sched_process_fork: comm=cove pid=100 child_comm=a child_pid=7 "
	                       "child_pid=101"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_FORK);
	ck_assert_int_eq(ev.tgid, 100);
	ck_assert_int_eq(ev.child, 101);
	ck_assert_int_eq(parse("            cove-101     (    101) [001] ..... 3.000020: "
	                       "sched_process_exec: filename=/a pid=1/b c/cove-vmm pid=101 "
	                       "old_pid=101"),
	                 0);
	ck_assert_int_eq(ev.kind, TRACE_EXEC);
	ck_assert_int_eq(ev.exec_pid, 101);
	ck_assert_str_eq(ev.exe, "cove-vmm");
	/* execveat on an fd: the name is the fd's. */
	ck_assert_int_eq(parse("  x-5 (      5) [000] ..... 1.000000: sched_process_exec: "
	                       "filename=/dev/fd/7 pid=5 old_pid=5"),
	                 0);
	ck_assert_str_eq(ev.exe, "7");
	ck_assert_int_eq(parse("  x-5 (      5) [000] ..... 1.000000: sched_process_exec: "
	                       "filename=/x pid=5 old_pid="),
	                 -EINVAL);
	ck_assert_int_eq(parse("  x-5 (      5) [000] ..... 1.000000: sched_process_fork: comm=x "
	                       "pid=5 child_comm=y child_pid=6 extra"),
	                 -EINVAL);
}
END_TEST

START_TEST(lost_headers_and_others)
{
	ck_assert_int_eq(parse("CPU:1 [LOST 123 EVENTS]\n"), 0);
	ck_assert_int_eq(ev.kind, TRACE_LOST);
	ck_assert_uint_eq(ev.lost, 123);
	ck_assert_int_eq(parse("CPU:1 [LOST many EVENTS]"), -EINVAL);
	ck_assert_int_eq(parse("# tracer: nop"), 0);
	ck_assert_int_eq(ev.kind, TRACE_NONE);
	ck_assert_int_eq(parse("\n"), 0);
	ck_assert_int_eq(ev.kind, TRACE_NONE);
	ck_assert_int_eq(parse("  x-5 (      5) [000] ..... 1.000000: sched_switch: prev=x"), 0);
	ck_assert_int_eq(ev.kind, TRACE_NONE);
}
END_TEST

START_TEST(malformed_refused)
{
	static const char *const bad[] = {
		"garbage",
		"  x-5 (      5) [000] ..... 1.1000000: sys_enter: NR 0 (0, 0)",
		"  x-5 (      5) [000] ..... 99999999999999999999.000000: sys_enter: NR 0 (0, 0)",
		"  x-5 (      5) [000] .....",
		"  x-5 (      5) [0",
		"  x-  (      5) [000] ..... 1.000000: sys_enter: NR 0 (0, 0)",
		"  x5 (      5) [000] ..... 1.000000: sys_enter: NR 0 (0, 0)",
		"  x-5 (   5x) [000] ..... 1.000000: sys_enter: NR 0 (0, 0)",
		"  x-5 (      5) [000] ..... 1.000000: sys_enter: NR x (0, 0)",
		"  x-5 (      5) [000] ..... 1.000000: sys_enter: NR 99999999999 (0, 0)",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse(bad[i]) == -EINVAL, "accepted: %s", bad[i]);
	/* A body cut after the number keeps the number, not the request. */
	ck_assert_int_eq(parse("  x-5 (      5) [000] ..... 1.000000: sys_enter: NR 16 (c, ae8"),
	                 0);
	ck_assert_int_eq(ev.nr, 16);
}
END_TEST

/* Every prefix of a good line, in a buffer exactly that long (ASan sees a
 * read past it): parsed or refused, never more. */
START_TEST(every_prefix_in_bounds)
{
	static const char *const good[] = {
		"        cove-vmm-4243    (   4240) [000] d..1. 17285.000001: kvm_exit: vcpu 0 "
		"reason "
		"npf rip 0x1",
		"            cove-101     (    101) [001] ..... 3.000020: sched_process_exec: "
		"filename=/a/cove-vmm pid=101 old_pid=101",
		"            cove-100     (    100) [001] ..... 3.000010: sched_process_fork: "
		"comm=cove "
		"pid=100 child_comm=cove child_pid=101",
		"        cove-vmm-4242    (   4240) [001] ..... 17284.993652: sys_enter: NR 16 (c, "
		"ae80, "
		"0, 0, 0, 0)",
		"CPU:1 [LOST 123 EVENTS]",
		"        cove-vmm-4243    (   4240) [000] d..1. 17285.000002: kvm_mmio: mmio write "
		"len 4 gpa 0xd0000050 val 0x1",
	};
	for (size_t g = 0; g < sizeof(good) / sizeof(good[0]); g++) {
		size_t n = strlen(good[g]);
		for (size_t l = 0; l <= n; l++) {
			char *b = malloc(l ? l : 1);
			memcpy(b, good[g], l);
			int r = trace_parse_line(b, l, &ev);
			ck_assert(r == 0 || r == -EINVAL);
			free(b);
		}
		ck_assert_int_eq(trace_parse_line(good[g], n, &ev), 0);
		ck_assert_int_ne(ev.kind, TRACE_NONE);
	}
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("bench_trace");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, syscall_line);
	tcase_add_test(tc, context_shapes);
	tcase_add_test(tc, kvm_exit_line);
	tcase_add_test(tc, kvm_mmio_line);
	tcase_add_test(tc, fork_and_exec);
	tcase_add_test(tc, lost_headers_and_others);
	tcase_add_test(tc, malformed_refused);
	tcase_add_test(tc, every_prefix_in_bounds);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
