/* Guest CPUID topology: one package, ncpus cores, one thread per core, APIC
 * id = vCPU index.  Leaf layouts from the Intel SDM (CPUID) and AMD APM. */
#include "arch/x86_64/cpuid.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define LEAF_VENDOR      0x0
#define LEAF_FEATURES    0x1
#define LEAF_CACHE       0x4
#define LEAF_PERFMON     0xa
#define LEAF_TOPOLOGY    0xb
#define LEAF_TOPOLOGY_V2 0x1f
#define LEAF_EXT_FEAT    0x80000001
#define LEAF_EXT_SIZES   0x80000008
#define LEAF_AMD_CACHE   0x8000001d
#define LEAF_AMD_TOPO    0x8000001e
#define LEAF_AMD_PERFMON 0x80000022

/* Leaf 1 */
#define L1_EBX_LOW_MASK   0x0000ffffu /* brand index, CLFLUSH size: kept */
#define L1_EBX_NLP_SHIFT  16
#define L1_EBX_APIC_SHIFT 24
#define L1_ECX_HYPERVISOR (1u << 31)
#define L1_EDX_HTT        (1u << 28)

/* Leaf 4 and AMD 0x8000001D: cache type in EAX[4:0], level in EAX[7:5],
 * threads sharing - 1 in EAX[25:14]; leaf 4 also cores - 1 in EAX[31:26]. */
#define CACHE_TYPE_MASK     0x1fu
#define CACHE_LEVEL_SHIFT   5
#define CACHE_LEVEL_MASK    0x7u
#define CACHE_SHARING_SHIFT 14
#define CACHE_SHARING_MASK  0xfffu
#define CACHE_CORES_SHIFT   26
#define CACHE_CORES_MASK    0x3fu
#define CACHE_SHARED_LEVEL  3 /* L3 and beyond span the package */

/* Leaves 0xB / 0x1F: level type in ECX[15:8]. */
#define TOPO_TYPE_INVALID 0
#define TOPO_TYPE_SMT     1
#define TOPO_TYPE_CORE    2
#define TOPO_TYPE_SHIFT   8

/* AMD */
#define EXT1_ECX_CMP_LEGACY      (1u << 1)
#define EXT1_ECX_PERFCTR_CORE    (1u << 23)
#define EXT8_ECX_NC_MASK         0xffu
#define EXT8_ECX_CORE_SIZE_SHIFT 12
#define EXT8_ECX_CORE_SIZE_MASK  (0xfu << EXT8_ECX_CORE_SIZE_SHIFT)
#define TOPO1E_EBX_KEEP          0xffff0000u /* core id, threads per core below */
#define TOPO1E_ECX_KEEP          0xfffff800u /* node id, nodes per socket below */

struct kvm_cpuid_entry2 *x86_cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index)
{
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];
		if (e->function != function)
			continue;
		if ((e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) && e->index != index)
			continue;
		return e;
	}
	return NULL;
}

static bool vendor_is_amd(struct kvm_cpuid2 *c)
{
	const struct kvm_cpuid_entry2 *e = x86_cpuid_find(c, LEAF_VENDOR, 0);
	if (!e)
		return false;
	char v[12];
	memcpy(v, &e->ebx, 4);
	memcpy(v + 4, &e->edx, 4);
	memcpy(v + 8, &e->ecx, 4);
	return memcmp(v, "AuthenticAMD", 12) == 0 || memcmp(v, "HygonGenuine", 12) == 0;
}

/* Bits needed to number ncpus cores: ceil(log2(ncpus)). */
static uint32_t core_shift(uint32_t ncpus)
{
	uint32_t s = 0;
	while ((1u << s) < ncpus)
		s++;
	return s;
}

static void set_field(uint32_t *reg, uint32_t mask, uint32_t shift, uint32_t v)
{
	*reg = (*reg & ~(mask << shift)) | ((v & mask) << shift);
}

static void patch_leaf1(struct kvm_cpuid_entry2 *e, uint32_t vcpu, uint32_t ncpus)
{
	e->ebx = (e->ebx & L1_EBX_LOW_MASK) | ncpus << L1_EBX_NLP_SHIFT | vcpu << L1_EBX_APIC_SHIFT;
	e->ecx |= L1_ECX_HYPERVISOR;
	if (ncpus > 1)
		e->edx |= L1_EDX_HTT;
	else
		e->edx &= ~L1_EDX_HTT;
}

/* Caches below L3 are private to a (single-threaded) core. */
static uint32_t cache_sharing(uint32_t eax, uint32_t ncpus)
{
	uint32_t level = (eax >> CACHE_LEVEL_SHIFT) & CACHE_LEVEL_MASK;
	return level >= CACHE_SHARED_LEVEL ? ncpus - 1 : 0;
}

static void patch_topology(struct kvm_cpuid_entry2 *e, uint32_t vcpu, uint32_t ncpus)
{
	uint32_t level = e->index;
	switch (level) {
	case 0:
		e->eax = 0; /* one thread per core: no SMT bits in the id */
		e->ebx = 1;
		e->ecx = TOPO_TYPE_SMT << TOPO_TYPE_SHIFT | level;
		break;
	case 1:
		e->eax = core_shift(ncpus);
		e->ebx = ncpus;
		e->ecx = TOPO_TYPE_CORE << TOPO_TYPE_SHIFT | level;
		break;
	default:
		e->eax = 0;
		e->ebx = 0;
		e->ecx = TOPO_TYPE_INVALID << TOPO_TYPE_SHIFT | (level & 0xff);
		break;
	}
	e->edx = vcpu;
}

static void patch_amd(struct kvm_cpuid_entry2 *e, uint32_t vcpu, uint32_t ncpus)
{
	switch (e->function) {
	case LEAF_EXT_FEAT:
		if (ncpus > 1)
			e->ecx |= EXT1_ECX_CMP_LEGACY;
		else
			e->ecx &= ~EXT1_ECX_CMP_LEGACY;
		e->ecx &= ~EXT1_ECX_PERFCTR_CORE;
		break;
	case LEAF_EXT_SIZES:
		e->ecx = (e->ecx & ~(EXT8_ECX_NC_MASK | EXT8_ECX_CORE_SIZE_MASK)) | (ncpus - 1) |
		         core_shift(ncpus) << EXT8_ECX_CORE_SIZE_SHIFT;
		break;
	case LEAF_AMD_CACHE:
		if (e->eax & CACHE_TYPE_MASK)
			set_field(&e->eax, CACHE_SHARING_MASK, CACHE_SHARING_SHIFT,
			          cache_sharing(e->eax, ncpus));
		break;
	case LEAF_AMD_TOPO:
		e->eax = vcpu;                                       /* extended APIC id */
		e->ebx = (e->ebx & TOPO1E_EBX_KEEP) | (vcpu & 0xff); /* core id, 1 thread */
		e->ecx &= TOPO1E_ECX_KEEP;                           /* node 0, one node */
		break;
	case LEAF_AMD_PERFMON:
		e->eax = e->ebx = e->ecx = e->edx = 0;
		break;
	default:
		break;
	}
}

int x86_cpuid_patch(struct kvm_cpuid2 *c, uint32_t vcpu_index, uint32_t ncpus)
{
	if (!c || ncpus == 0 || ncpus > X86_CPUID_MAX_CPUS || vcpu_index >= ncpus)
		return -EINVAL;
	bool amd = vendor_is_amd(c);
	uint32_t cores = ncpus < CACHE_CORES_MASK + 1 ? ncpus : CACHE_CORES_MASK + 1;

	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];
		switch (e->function) {
		case LEAF_FEATURES:
			patch_leaf1(e, vcpu_index, ncpus);
			break;
		case LEAF_CACHE:
			if (!(e->eax & CACHE_TYPE_MASK))
				break; /* the terminating null entry */
			set_field(&e->eax, CACHE_CORES_MASK, CACHE_CORES_SHIFT, cores - 1);
			set_field(&e->eax, CACHE_SHARING_MASK, CACHE_SHARING_SHIFT,
			          cache_sharing(e->eax, ncpus));
			break;
		case LEAF_PERFMON:
			/* No virtual PMU: version 0 means no architectural perfmon. */
			e->eax = e->ebx = e->ecx = e->edx = 0;
			break;
		case LEAF_TOPOLOGY:
		case LEAF_TOPOLOGY_V2:
			patch_topology(e, vcpu_index, ncpus);
			break;
		default:
			if (amd)
				patch_amd(e, vcpu_index, ncpus);
			break;
		}
	}
	return 0;
}
