/* Unit tests: guest CPUID topology patching over a fabricated
 * KVM_GET_SUPPORTED_CPUID answer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/cpuid.h"
#include "unit.h"

#define SIG KVM_CPUID_FLAG_SIGNIFCANT_INDEX

/* Leaf 4 EAX: type in [4:0], level in [7:5]; upper fields filled as a
 * 2-core SMT host would report them, so the test sees them rewritten. */
#define CACHE(type, level) ((type) | (level) << 5 | 1u << 14 | 1u << 26)

static const struct kvm_cpuid_entry2 host_intel[] = {
	{ .function = 0, .eax = 0x1f, .ebx = 0x756e6547, .edx = 0x49656e69, .ecx = 0x6c65746e },
	{ .function = 1, .eax = 0x806f8, .ebx = 0x02100800, .ecx = 0x80200001, .edx = 0x178bfbff },
	{ .function = 4, .index = 0, .flags = SIG, .eax = CACHE(1, 1) },
	{ .function = 4, .index = 1, .flags = SIG, .eax = CACHE(2, 1) },
	{ .function = 4, .index = 2, .flags = SIG, .eax = CACHE(3, 2) },
	{ .function = 4, .index = 3, .flags = SIG, .eax = CACHE(3, 3) },
	{ .function = 4, .index = 4, .flags = SIG, .eax = 0 },
	{ .function = 0xa, .eax = 0x07300402, .ebx = 0, .edx = 0x603 },
	{ .function = 0xb, .index = 0, .flags = SIG, .eax = 1, .ebx = 2, .ecx = 0x100, .edx = 7 },
	{ .function = 0xb, .index = 1, .flags = SIG, .eax = 7, .ebx = 64, .ecx = 0x201, .edx = 7 },
	{ .function = 0xb, .index = 2, .flags = SIG, .ecx = 2, .edx = 7 },
	{ .function = 0x40000000,
	  .eax = 0x40000001,
	  .ebx = 0x4b4d564b,
	  .ecx = 0x564b4d56,
	  .edx = 0x4d },
	{ .function = 0x40000001, .eax = 0x01007afb },
	{ .function = 0x80000000, .eax = 0x80000008 },
	{ .function = 0x80000001, .ecx = 0x121, .edx = 0x2c100800 },
	{ .function = 0x80000008, .eax = 0x3030, .ecx = 0 },
};

static const struct kvm_cpuid_entry2 host_amd[] = {
	{ .function = 0, .eax = 0x10, .ebx = 0x68747541, .edx = 0x69746e65, .ecx = 0x444d4163 },
	{ .function = 1, .eax = 0xa20f10, .ebx = 0x0c100800, .ecx = 0xf6d8320b, .edx = 0x178bfbff },
	{ .function = 0xb, .index = 0, .flags = SIG, .eax = 1, .ebx = 2, .ecx = 0x100 },
	{ .function = 0xb, .index = 1, .flags = SIG, .eax = 4, .ebx = 12, .ecx = 0x201 },
	{ .function = 0x80000000, .eax = 0x80000022 },
	{ .function = 0x80000001, .ecx = 0x75c237ff | 1u << 23, .edx = 0x2fd3fbff },
	{ .function = 0x80000008, .eax = 0x3030, .ecx = 0x1000b | 0x7 << 12 },
	{ .function = 0x8000001d, .index = 0, .flags = SIG, .eax = CACHE(1, 1) },
	{ .function = 0x8000001d, .index = 3, .flags = SIG, .eax = CACHE(3, 3) },
	{ .function = 0x8000001e, .eax = 0xb, .ebx = 0x105, .ecx = 0x300 },
	{ .function = 0x80000022, .eax = 0x1, .ebx = 0x5 },
};

static struct kvm_cpuid2 *copy(const struct kvm_cpuid_entry2 *e, size_t n)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(*e));
	ck_assert_ptr_nonnull(c);
	c->nent = (uint32_t)n;
	memcpy(c->entries, e, n * sizeof(*e));
	return c;
}

#define COPY(arr) copy(arr, sizeof(arr) / sizeof(arr[0]))

static struct kvm_cpuid_entry2 *leaf(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	struct kvm_cpuid_entry2 *e = x86_cpuid_find(c, fn, idx);
	ck_assert_msg(e, "leaf 0x%x.%u missing", fn, idx);
	return e;
}

static const unsigned counts[] = { 1, 2, 4, 6 };
static const uint32_t shifts[] = { 0, 1, 2, 3 };

START_TEST(intel_topology)
{
	unsigned ncpus = counts[_i];
	for (unsigned v = 0; v < ncpus; v++) {
		struct kvm_cpuid2 *c = COPY(host_intel);
		ck_assert_int_eq(x86_cpuid_patch(c, v, ncpus), 0);

		struct kvm_cpuid_entry2 *e = leaf(c, 1, 0);
		ck_assert_uint_eq(e->ebx >> 24, v);                  /* initial APIC id */
		ck_assert_uint_eq((e->ebx >> 16) & 0xff, ncpus);     /* logical processors */
		ck_assert_uint_eq(e->ebx & 0xffff, 0x0800);          /* CLFLUSH size kept */
		ck_assert_uint_eq(!!(e->edx & 1u << 28), ncpus > 1); /* HTT */
		ck_assert(e->ecx & 1u << 31);                        /* hypervisor */
		ck_assert_uint_eq(e->eax, 0x806f8);

		e = leaf(c, 0xb, 0); /* SMT: one thread */
		ck_assert_uint_eq(e->eax & 0x1f, 0);
		ck_assert_uint_eq(e->ebx, 1);
		ck_assert_uint_eq(e->ecx, 0x100);
		ck_assert_uint_eq(e->edx, v);
		e = leaf(c, 0xb, 1); /* core: ncpus */
		ck_assert_uint_eq(e->eax & 0x1f, shifts[_i]);
		ck_assert_uint_eq(e->ebx, ncpus);
		ck_assert_uint_eq(e->ecx, 0x201);
		ck_assert_uint_eq(e->edx, v);
		e = leaf(c, 0xb, 2); /* end of levels */
		ck_assert_uint_eq(e->ebx, 0);
		ck_assert_uint_eq((e->ecx >> 8) & 0xff, 0);
		ck_assert_uint_eq(e->ecx & 0xff, 2);
		ck_assert_uint_eq(e->edx, v);
		/* the APIC id fits in the shift, as Linux's package id math needs */
		ck_assert_uint_lt(v, 1u << shifts[_i]);

		for (uint32_t i = 0; i < 4; i++) {
			e = leaf(c, 4, i);
			uint32_t level = (e->eax >> 5) & 7;
			ck_assert_uint_eq(e->eax & 0x1f, i == 0 ? 1 : i == 1 ? 2 : 3);
			ck_assert_uint_eq(e->eax >> 26, ncpus - 1);
			ck_assert_uint_eq((e->eax >> 14) & 0xfff, level >= 3 ? ncpus - 1 : 0);
		}
		ck_assert_uint_eq(leaf(c, 4, 4)->eax, 0); /* null entry untouched */

		e = leaf(c, 0xa, 0);
		ck_assert_uint_eq(e->eax | e->ebx | e->ecx | e->edx, 0);
		/* KVM's paravirt leaves and Intel's 0x80000008 stay as they were */
		ck_assert_mem_eq(leaf(c, 0x40000000, 0), &host_intel[11], sizeof(host_intel[11]));
		ck_assert_mem_eq(leaf(c, 0x40000001, 0), &host_intel[12], sizeof(host_intel[12]));
		ck_assert_mem_eq(leaf(c, 0x80000008, 0), &host_intel[15], sizeof(host_intel[15]));
		ck_assert_mem_eq(leaf(c, 0x80000001, 0), &host_intel[14], sizeof(host_intel[14]));
		ck_assert_uint_eq(c->nent, sizeof(host_intel) / sizeof(host_intel[0]));
		free(c);
	}
}
END_TEST

START_TEST(amd_topology)
{
	unsigned ncpus = counts[_i];
	for (unsigned v = 0; v < ncpus; v++) {
		struct kvm_cpuid2 *c = COPY(host_amd);
		ck_assert_int_eq(x86_cpuid_patch(c, v, ncpus), 0);

		struct kvm_cpuid_entry2 *e = leaf(c, 1, 0);
		ck_assert_uint_eq(e->ebx >> 24, v);
		ck_assert_uint_eq((e->ebx >> 16) & 0xff, ncpus);

		e = leaf(c, 0x80000001, 0);
		ck_assert_uint_eq(!!(e->ecx & 2), ncpus > 1); /* CmpLegacy */
		ck_assert_uint_eq(e->ecx & 1u << 23, 0);      /* no core perf counters */
		ck_assert_uint_eq(e->ecx & ~(2u | 1u << 23), 0x75c237ffu & ~(2u | 1u << 23));

		e = leaf(c, 0x80000008, 0);
		ck_assert_uint_eq(e->ecx & 0xff, ncpus - 1);         /* NC */
		ck_assert_uint_eq((e->ecx >> 12) & 0xf, shifts[_i]); /* ApicIdCoreIdSize */
		ck_assert_uint_eq(e->ecx & 0x30000, 0x10000);        /* other bits kept */
		ck_assert_uint_eq(e->eax, 0x3030);

		e = leaf(c, 0x8000001e, 0);
		ck_assert_uint_eq(e->eax, v);               /* extended APIC id */
		ck_assert_uint_eq(e->ebx & 0xff, v);        /* core id */
		ck_assert_uint_eq((e->ebx >> 8) & 0xff, 0); /* one thread per core */
		ck_assert_uint_eq(e->ecx & 0x7ff, 0);       /* node 0 of 1 */

		ck_assert_uint_eq((leaf(c, 0x8000001d, 0)->eax >> 14) & 0xfff, 0);
		ck_assert_uint_eq((leaf(c, 0x8000001d, 3)->eax >> 14) & 0xfff, ncpus - 1);
		e = leaf(c, 0x80000022, 0);
		ck_assert_uint_eq(e->eax | e->ebx | e->ecx | e->edx, 0);

		ck_assert_uint_eq(leaf(c, 0xb, 1)->ebx, ncpus);
		ck_assert_uint_eq(leaf(c, 0xb, 1)->edx, v);
		free(c);
	}
}
END_TEST

START_TEST(find_honours_significant_index)
{
	struct kvm_cpuid2 *c = COPY(host_intel);
	/* leaf 1 has no significant index: any index finds it */
	ck_assert_ptr_eq(x86_cpuid_find(c, 1, 0), &c->entries[1]);
	ck_assert_ptr_eq(x86_cpuid_find(c, 1, 7), &c->entries[1]);
	/* leaf 4 does */
	ck_assert_ptr_eq(x86_cpuid_find(c, 4, 2), &c->entries[4]);
	ck_assert_ptr_null(x86_cpuid_find(c, 4, 5));
	ck_assert_ptr_null(x86_cpuid_find(c, 0x1f, 0));
	free(c);
}
END_TEST

START_TEST(bad_arguments_rejected)
{
	struct kvm_cpuid2 *c = COPY(host_intel);
	ck_assert_int_eq(x86_cpuid_patch(c, 0, 0), -EINVAL);
	ck_assert_int_eq(x86_cpuid_patch(c, 0, 255), -EINVAL);
	ck_assert_int_eq(x86_cpuid_patch(c, 4, 4), -EINVAL);
	ck_assert_int_eq(x86_cpuid_patch(NULL, 0, 1), -EINVAL);
	/* nothing was changed by the refused calls */
	ck_assert_mem_eq(c->entries, host_intel, sizeof(host_intel));
	/* the largest guest: leaf 4's 6-bit core field saturates */
	ck_assert_int_eq(x86_cpuid_patch(c, 253, 254), 0);
	ck_assert_uint_eq(x86_cpuid_find(c, 1, 0)->ebx >> 24, 253);
	ck_assert_uint_eq(x86_cpuid_find(c, 4, 0)->eax >> 26, 63);
	ck_assert_uint_eq(x86_cpuid_find(c, 0xb, 1)->eax, 8);
	free(c);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("cpuid");
	TCase *tc = tcase_create("topology");
	tcase_add_loop_test(tc, intel_topology, 0, 4);
	tcase_add_loop_test(tc, amd_topology, 0, 4);
	tcase_add_test(tc, find_honours_significant_index);
	tcase_add_test(tc, bad_arguments_rejected);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
