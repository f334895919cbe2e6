/* Unit tests: the KVM route decision (lib/kvm_probe.c) for the verdicts a
 * probe can give (PVM, no /dev/kvm, EACCES, works, no emulator), backend
 * detection on fabricated /sys and /proc trees, and the probe's child
 * process on device nodes that are not KVM. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/vmm/kvm_probe.h"
#include "unit.h"

static struct kvm_probe verdict(enum kvm_probe_status st, enum kvm_backend b, int err,
                                const char *detail)
{
	struct kvm_probe p;
	memset(&p, 0, sizeof(p));
	p.status = st;
	p.backend = b;
	p.err = err;
	snprintf(p.detail, sizeof(p.detail), "%s", detail);
	return p;
}

START_TEST(route_pvm)
{
	struct kvm_probe p = verdict(
	    KVM_PROBE_GUEST_FAILED, KVM_BACKEND_PVM, 0,
	    "lock cmpxchg16b: KVM internal error (instruction emulation failed) at rip 0x8017");
	char why[512];
	ck_assert_int_eq(kvm_route_decide(&p, true, why, sizeof(why)), KVM_ROUTE_EMULATED);
	ck_assert_str_eq(why, "/dev/kvm is PVM (kvm_pvm): it runs only PVM guest kernels; "
	                      "using the emulated host");
	/* PVM whose module loads but whose VM setup fails: the same advice. */
	p = verdict(KVM_PROBE_UNUSABLE, KVM_BACKEND_PVM, 0, "KVM_SET_MSRS refused MSR 0x10");
	ck_assert_int_eq(kvm_route_decide(&p, true, why, sizeof(why)), KVM_ROUTE_EMULATED);
	ck_assert_ptr_nonnull(strstr(why, "PVM guest kernels"));
}
END_TEST

START_TEST(route_absent)
{
	struct kvm_probe p = verdict(KVM_PROBE_ABSENT, KVM_BACKEND_NONE, ENOENT, "");
	char why[512];
	ck_assert_int_eq(kvm_route_decide(&p, true, why, sizeof(why)), KVM_ROUTE_EMULATED);
	ck_assert_ptr_nonnull(strstr(why, "no /dev/kvm"));
	ck_assert_ptr_nonnull(strstr(why, "no VMX or SVM"));
	ck_assert_ptr_nonnull(strstr(why, "; using the emulated host"));
	snprintf(p.vendor, sizeof(p.vendor), "vmx");
	p.backend = KVM_BACKEND_HW;
	ck_assert_int_eq(kvm_route_decide(&p, true, why, sizeof(why)), KVM_ROUTE_EMULATED);
	ck_assert_ptr_nonnull(strstr(why, "device node"));
}
END_TEST

START_TEST(route_eacces)
{
	struct kvm_probe p = verdict(KVM_PROBE_NO_ACCESS, KVM_BACKEND_HW, EACCES,
	                             "cannot open /dev/kvm: Permission denied");
	char why[512];
	ck_assert_int_eq(kvm_route_decide(&p, true, why, sizeof(why)), KVM_ROUTE_EMULATED);
	ck_assert_ptr_nonnull(strstr(why, "Permission denied"));
	ck_assert_ptr_nonnull(strstr(why, "group kvm"));
}
END_TEST

START_TEST(route_works)
{
	struct kvm_probe p = verdict(KVM_PROBE_WORKS, KVM_BACKEND_NESTED, 0, "");
	char why[512] = "stale";
	ck_assert_int_eq(kvm_route_decide(&p, true, why, sizeof(why)), KVM_ROUTE_DIRECT);
	ck_assert_str_eq(why, "");
	/* Working KVM needs no emulator. */
	ck_assert_int_eq(kvm_route_decide(&p, false, why, sizeof(why)), KVM_ROUTE_DIRECT);
}
END_TEST

START_TEST(route_no_emulator)
{
	struct kvm_probe p = verdict(KVM_PROBE_GUEST_FAILED, KVM_BACKEND_NESTED, 0,
	                             "xsetbv, xsave and xrstor: triple fault at rip 0x8029");
	char why[512];
	ck_assert_int_eq(kvm_route_decide(&p, false, why, sizeof(why)), KVM_ROUTE_NONE);
	ck_assert_ptr_nonnull(strstr(why, "(nested) cannot run a standard guest: xsetbv"));
	ck_assert_ptr_nonnull(strstr(why, "scripts/install-deps"));
}
END_TEST

static char root[64];

static void mk(const char *rel, const char *content)
{
	char path[256];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	if (content) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(content, f);
		fclose(f);
	} else {
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
}

static void rm_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(backend_detect)
{
	snprintf(root, sizeof(root), "/tmp/cove-kp-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	mk("/sys", NULL);
	mk("/sys/module", NULL);
	mk("/proc", NULL);
	char vendor[8] = "x";
	ck_assert_int_eq(kvm_backend_detect(root, vendor), KVM_BACKEND_NONE);
	ck_assert_str_eq(vendor, "");

	mk("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 hypervisor lahf_lm\n");
	mk("/sys/module/kvm", NULL);
	ck_assert_int_eq(kvm_backend_detect(root, vendor), KVM_BACKEND_UNKNOWN);
	mk("/sys/module/kvm_pvm", NULL);
	ck_assert_int_eq(kvm_backend_detect(root, vendor), KVM_BACKEND_PVM);
	ck_assert_str_eq(vendor, "");

	mk("/sys/module/kvm_amd", NULL); /* a vendor module wins over PVM */
	mk("/proc/cpuinfo",
	   "flags\t\t: fpu svm hypervisor\nflags\t\t: later lines are ignored vmx\n");
	ck_assert_int_eq(kvm_backend_detect(root, vendor), KVM_BACKEND_NESTED);
	ck_assert_str_eq(vendor, "svm");

	mk("/proc/cpuinfo", "flags\t\t: fpu vmx\n");
	ck_assert_int_eq(kvm_backend_detect(root, vendor), KVM_BACKEND_HW);
	ck_assert_str_eq(vendor, "vmx");
	ck_assert_str_eq(kvm_backend_name(KVM_BACKEND_PVM), "PVM");
	rm_tree();
}
END_TEST

START_TEST(probe_not_kvm)
{
	struct kvm_probe p;
	ck_assert_int_eq(kvm_probe_run("/nonexistent/kvm", 5, &p), KVM_PROBE_ABSENT);
	ck_assert_int_eq(p.err, ENOENT);
	/* Opens, but is no KVM: the child reports it, the parent relays it. */
	ck_assert_int_eq(kvm_probe_run("/dev/null", 5, &p), KVM_PROBE_UNUSABLE);
	ck_assert_ptr_nonnull(strstr(p.detail, "KVM API version"));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("kvm_probe");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, route_pvm);
	tcase_add_test(tc, route_absent);
	tcase_add_test(tc, route_eacces);
	tcase_add_test(tc, route_works);
	tcase_add_test(tc, route_no_emulator);
	tcase_add_test(tc, backend_detect);
	tcase_add_test(tc, probe_not_kvm);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
