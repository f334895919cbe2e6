/* x86_64 kernel loader: ELF64 vmlinux via its PVH note, or bzImage via the
 * 64-bit boot protocol (Documentation/x86/boot.rst). */
#include "arch/x86_64/loader.h"

#include <assert.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86_64/layout.h"
#include "errf.h"

/* From xen/include/public/elfnote.h: the 32-bit physical PVH entry point. */
#define XEN_ELFNOTE_PHYS32_ENTRY 18

/* A vmlinux has a handful of program headers; more is not a kernel. */
#define ELF_MAX_PHDRS 64

/* bzImage setup header (boot.rst): byte offsets in the file. */
#define BZ_HDR_OFFSET       0x1f1
#define BZ_BOOT_FLAG_OFFSET 0x1fe
#define BZ_JUMP_END_OFFSET  0x201 /* header ends at 0x202 + this byte */
#define BZ_MAGIC_OFFSET     0x202
#define BZ_BOOT_FLAG        0xaa55
#define BZ_HDRS_MAGIC       0x53726448U /* "HdrS" */
#define BZ_MIN_VERSION      0x020c      /* 2.12: xloadflags */
#define BZ_SECTOR           512
#define BZ_DEFAULT_SECTS    4
#define BZ_ENTRY64_OFFSET   0x200 /* startup_64 */

static_assert(offsetof(struct setup_header, init_size) == 0x260 - BZ_HDR_OFFSET,
              "setup_header layout");
static_assert(sizeof(struct setup_header) == 0x26c - BZ_HDR_OFFSET, "setup_header size");

/* [off, off + n) lies inside a file of len bytes, without overflow. */
static bool in_file(uint64_t off, uint64_t n, size_t len)
{
	return off <= len && n <= len - off;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* ---- ELF64 vmlinux ------------------------------------------------------- */

/* Looks for the Xen PHYS32_ENTRY note in a PT_NOTE segment.  Returns 1 and
 * sets *entry when found, 0 when absent, -ENOEXEC on a malformed note. */
static int elf_find_pvh_note(const uint8_t *img, const Elf64_Phdr *ph, uint64_t *entry, char *err,
                             size_t errlen)
{
	const uint8_t *p = img + ph->p_offset;
	uint64_t rem = ph->p_filesz;
	/* Linux emits 4-byte aligned notes; honour 8 when the segment says so. */
	uint64_t a = ph->p_align == 8 ? 8 : 4;

	while (rem >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		memcpy(&nh, p, sizeof(nh));
		uint64_t name_len = align_up(nh.n_namesz, a);
		uint64_t desc_len = align_up(nh.n_descsz, a);
		uint64_t body = rem - sizeof(nh);
		if (name_len > body || desc_len > body - name_len)
			return errf(err, errlen, -ENOEXEC, "vmlinux: truncated ELF note");
		const uint8_t *name = p + sizeof(nh);
		const uint8_t *desc = name + name_len;
		if (nh.n_namesz == 4 && memcmp(name, "Xen", 4) == 0 &&
		    nh.n_type == XEN_ELFNOTE_PHYS32_ENTRY) {
			uint64_t v;
			if (nh.n_descsz == 4) {
				v = get32(desc);
			} else if (nh.n_descsz == 8) {
				v = get32(desc) | (uint64_t)get32(desc + 4) << 32;
			} else {
				return errf(err, errlen, -ENOEXEC,
				            "vmlinux: PVH entry note has %u-byte value",
				            nh.n_descsz);
			}
			if (v > UINT32_MAX)
				return errf(err, errlen, -ENOEXEC,
				            "vmlinux: PVH entry 0x%llx is not a 32-bit address",
				            (unsigned long long)v);
			*entry = v;
			return 1;
		}
		uint64_t step = sizeof(nh) + name_len + desc_len;
		p += step;
		rem -= step;
	}
	return 0;
}

/* Checks one PT_LOAD header against the file and guest RAM. */
static int elf_check_load(const struct guest_mem *m, const Elf64_Phdr *ph, size_t len, unsigned i,
                          char *err, size_t errlen)
{
	if (ph->p_filesz > ph->p_memsz)
		return errf(err, errlen, -ENOEXEC, "vmlinux: segment %u has filesz > memsz", i);
	if (!in_file(ph->p_offset, ph->p_filesz, len))
		return errf(err, errlen, -ENOEXEC,
		            "vmlinux: segment %u (offset 0x%llx, 0x%llx bytes) is past the end "
		            "of the file",
		            i, (unsigned long long)ph->p_offset, (unsigned long long)ph->p_filesz);
	if (ph->p_paddr < X86_KERNEL_LOAD)
		return errf(err, errlen, -ENOEXEC,
		            "vmlinux: segment %u at 0x%llx overlaps the boot area below 1 MiB", i,
		            (unsigned long long)ph->p_paddr);
	/* The PVH entry runs in 32-bit mode: everything must sit below 4 GiB. */
	if (ph->p_memsz > X86_MMIO_HOLE_END || ph->p_paddr > X86_MMIO_HOLE_END - ph->p_memsz)
		return errf(
		    err, errlen, -EFBIG,
		    "vmlinux: segment %u [0x%llx, +0x%llx) is outside guest RAM (above 4 GiB)", i,
		    (unsigned long long)ph->p_paddr, (unsigned long long)ph->p_memsz);
	if (ph->p_memsz && !gmem_ptr(m, ph->p_paddr, ph->p_memsz))
		return errf(
		    err, errlen, -EFBIG,
		    "vmlinux: segment %u [0x%llx, +0x%llx) is outside guest RAM (%llu MiB; "
		    "this kernel needs at least %llu)",
		    i, (unsigned long long)ph->p_paddr, (unsigned long long)ph->p_memsz,
		    (unsigned long long)(m->ram_size >> 20),
		    (unsigned long long)((ph->p_paddr + ph->p_memsz + (1ULL << 20) - 1) >> 20));
	return 0;
}

static int load_elf(const struct guest_mem *m, const uint8_t *img, size_t len, struct x86_kernel *k,
                    char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	if (len < sizeof(eh))
		return errf(err, errlen, -ENOEXEC, "vmlinux: file too short for an ELF header");
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_ident[EI_VERSION] != EV_CURRENT)
		return errf(err, errlen, -ENOEXEC, "vmlinux: not a little-endian ELF64 file");
	if (eh.e_machine != EM_X86_64)
		return errf(err, errlen, -ENOEXEC, "vmlinux: not an x86_64 ELF file (machine %u)",
		            eh.e_machine);
	if (eh.e_type != ET_EXEC)
		return errf(err, errlen, -ENOEXEC, "vmlinux: not an executable (ELF type %u)",
		            eh.e_type);
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > ELF_MAX_PHDRS)
		return errf(err, errlen, -ENOEXEC, "vmlinux: bad program header table (%u x %u)",
		            eh.e_phnum, eh.e_phentsize);
	if (!in_file(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), len))
		return errf(err, errlen, -ENOEXEC,
		            "vmlinux: program headers are past the end of the file");

	Elf64_Phdr ph[ELF_MAX_PHDRS];
	memcpy(ph, img + eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr));

	/* Check everything before writing anything to guest RAM. */
	uint64_t lo = UINT64_MAX, hi = 0, entry = 0;
	bool have_entry = false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		int rc;
		if (ph[i].p_type == PT_LOAD) {
			rc = elf_check_load(m, &ph[i], len, i, err, errlen);
			if (rc < 0)
				return rc;
			if (ph[i].p_memsz == 0)
				continue;
			if (ph[i].p_paddr < lo)
				lo = ph[i].p_paddr;
			if (ph[i].p_paddr + ph[i].p_memsz > hi)
				hi = ph[i].p_paddr + ph[i].p_memsz;
		} else if (ph[i].p_type == PT_NOTE && !have_entry) {
			if (!in_file(ph[i].p_offset, ph[i].p_filesz, len))
				return errf(err, errlen, -ENOEXEC,
				            "vmlinux: note segment %u is past the end of the file",
				            i);
			rc = elf_find_pvh_note(img, &ph[i], &entry, err, errlen);
			if (rc < 0)
				return rc;
			have_entry = rc == 1;
		}
	}
	if (hi == 0)
		return errf(err, errlen, -ENOEXEC, "vmlinux: no loadable segments");
	if (!have_entry)
		return errf(err, errlen, -ENOEXEC,
		            "vmlinux has no PVH entry note (build with CONFIG_PVH)");

	bool entry_loaded = false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		if (entry >= p->p_paddr && entry - p->p_paddr < p->p_memsz)
			entry_loaded = true;
	}
	if (!entry_loaded)
		return errf(err, errlen, -ENOEXEC,
		            "vmlinux: PVH entry 0x%llx is not inside a loaded segment",
		            (unsigned long long)entry);

	for (unsigned i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		uint8_t *dst = gmem_ptr(m, p->p_paddr, p->p_memsz);
		if (!dst) /* checked above; only an unmapped guest_mem gets here */
			return errf(err, errlen, -EFBIG, "vmlinux: segment %u is not mapped", i);
		memcpy(dst, img + p->p_offset, p->p_filesz);
		memset(dst + p->p_filesz, 0, p->p_memsz - p->p_filesz);
	}

	k->mode = X86_BOOT_PVH;
	k->entry = entry;
	k->load_addr = lo;
	k->load_end = hi;
	return 0;
}

/* ---- bzImage ------------------------------------------------------------- */

static bool is_bzimage(const uint8_t *img, size_t len)
{
	return len >= BZ_MAGIC_OFFSET + 4 && get16(img + BZ_BOOT_FLAG_OFFSET) == BZ_BOOT_FLAG &&
	       get32(img + BZ_MAGIC_OFFSET) == BZ_HDRS_MAGIC;
}

static int load_bzimage(const struct guest_mem *m, const uint8_t *img, size_t len,
                        struct x86_kernel *k, char *err, size_t errlen)
{
	struct setup_header h;
	size_t hdr_end = BZ_MAGIC_OFFSET + (size_t)img[BZ_JUMP_END_OFFSET];
	size_t need = BZ_HDR_OFFSET + offsetof(struct setup_header, init_size) + 4;
	if (hdr_end > len)
		return errf(err, errlen, -ENOEXEC, "bzImage: setup header is truncated");
	memset(&h, 0, sizeof(h));
	size_t n = hdr_end - BZ_HDR_OFFSET;
	memcpy(&h, img + BZ_HDR_OFFSET, n < sizeof(h) ? n : sizeof(h));

	if (h.version < BZ_MIN_VERSION)
		return errf(err, errlen, -ENOEXEC,
		            "bzImage: boot protocol %u.%02u is too old (need 2.12)", h.version >> 8,
		            h.version & 0xff);
	if (hdr_end < need)
		return errf(err, errlen, -ENOEXEC,
		            "bzImage: setup header is too short for protocol 2.12");
	if (!(h.xloadflags & XLF_KERNEL_64))
		return errf(err, errlen, -ENOEXEC,
		            "bzImage: no 64-bit entry point (XLF_KERNEL_64 not set)");
	if (!(h.loadflags & LOADED_HIGH))
		return errf(err, errlen, -ENOEXEC, "bzImage: kernel does not load at 1 MiB");

	uint64_t sects = h.setup_sects ? h.setup_sects : BZ_DEFAULT_SECTS;
	uint64_t pm_off = (sects + 1) * BZ_SECTOR;
	if (pm_off >= len)
		return errf(err, errlen, -ENOEXEC,
		            "bzImage: setup code (%llu sectors) reaches the end of the file",
		            (unsigned long long)sects);
	uint64_t pm_len = len - pm_off;
	if ((uint64_t)h.syssize * 16 > pm_len)
		return errf(err, errlen, -ENOEXEC,
		            "bzImage: truncated: kernel is %llu bytes, header says %llu",
		            (unsigned long long)pm_len, (unsigned long long)h.syssize * 16);
	if (h.init_size == 0)
		return errf(err, errlen, -ENOEXEC, "bzImage: init_size is 0");

	/* The decompressor works in [max(aligned load address, pref_address),
	 * + init_size): startup_64 moves itself there before extracting. */
	uint64_t base = X86_KERNEL_LOAD;
	uint64_t ws = base;
	if (h.relocatable_kernel && h.kernel_alignment &&
	    !(h.kernel_alignment & (h.kernel_alignment - 1)))
		ws = align_up(base, h.kernel_alignment);
	if (h.pref_address > ws)
		ws = h.pref_address;
	if (ws >= X86_MMIO_HOLE_END || !gmem_ptr(m, ws, h.init_size))
		return errf(err, errlen, -EFBIG,
		            "bzImage: kernel needs 0x%x bytes at 0x%llx (init_size), beyond RAM",
		            h.init_size, (unsigned long long)ws);
	uint8_t *dst = gmem_ptr(m, base, pm_len);
	if (!dst)
		return errf(err, errlen, -EFBIG,
		            "bzImage: kernel (%llu bytes) does not fit in RAM at 0x%llx",
		            (unsigned long long)pm_len, (unsigned long long)base);
	memcpy(dst, img + pm_off, pm_len);

	k->mode = X86_BOOT_LINUX64;
	k->entry = base + BZ_ENTRY64_OFFSET;
	k->load_addr = base;
	k->load_end = base + pm_len > ws + h.init_size ? base + pm_len : ws + h.init_size;
	k->hdr = h;
	return 0;
}

int x86_load_kernel(const struct guest_mem *m, const uint8_t *img, size_t len, struct x86_kernel *k,
                    char *err, size_t errlen)
{
	if (!m || !k || (!img && len))
		return errf(err, errlen, -EINVAL, "kernel loader: bad arguments");
	memset(k, 0, sizeof(*k));
	if (len >= SELFMAG && memcmp(img, ELFMAG, SELFMAG) == 0)
		return load_elf(m, img, len, k, err, errlen);
	if (is_bzimage(img, len))
		return load_bzimage(m, img, len, k, err, errlen);
	return errf(err, errlen, -ENOEXEC,
	            "kernel image is neither an ELF vmlinux nor a bzImage (%zu bytes)", len);
}
