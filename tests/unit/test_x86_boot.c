/* Unit tests: x86_64 kernel loader (ELF/PVH and bzImage), e820, zero page,
 * PVH start_info, initrd placement and the MP table. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/x86_64/boot.h"
#include "arch/x86_64/layout.h"
#include "arch/x86_64/loader.h"
#include "arch/x86_64/mptable.h"
#include "base/guest_mem.h"
#include "unit.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static struct guest_mem mem_new(uint64_t size)
{
	struct guest_mem m;
	ck_assert_int_eq(gmem_create(&m, size, X86_MMIO_HOLE), 0);
	return m;
}

static uint32_t rd32(const struct guest_mem *m, uint64_t gpa)
{
	uint32_t v;
	ck_assert_int_eq(gmem_read(m, gpa, &v, sizeof(v)), 0);
	return v;
}

static uint64_t rd64(const struct guest_mem *m, uint64_t gpa)
{
	uint64_t v;
	ck_assert_int_eq(gmem_read(m, gpa, &v, sizeof(v)), 0);
	return v;
}

static uint8_t rd8(const struct guest_mem *m, uint64_t gpa)
{
	uint8_t v;
	ck_assert_int_eq(gmem_read(m, gpa, &v, sizeof(v)), 0);
	return v;
}

/* ---- synthetic images ----------------------------------------------------- */

/* A minimal vmlinux: ELF header, a PT_LOAD and a PT_NOTE header, the notes
 * (a GNU note first, then Xen PHYS32_ENTRY with an 8-byte value as Linux
 * emits it), then SEG_FILESZ bytes of segment data. */
#define ELF_PADDR      0x1000000ULL
#define ELF_ENTRY      (ELF_PADDR + 0x40)
#define SEG_FILESZ     0x100
#define SEG_MEMSZ      0x2000
#define ELF_NOTE_OFF   (sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr))
#define ELF_NOTES_SIZE (2 * (sizeof(Elf64_Nhdr) + 4 + 8))
#define ELF_SEG_OFF    0x200
#define ELF_SIZE       (ELF_SEG_OFF + SEG_FILESZ)

struct elf_img {
	_Alignas(8) uint8_t b[ELF_SIZE];
};

static void put_note(uint8_t *p, const char name[4], uint32_t type, uint64_t value)
{
	Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = 8, .n_type = type };
	memcpy(p, &nh, sizeof(nh));
	memcpy(p + sizeof(nh), name, 4);
	memcpy(p + sizeof(nh) + 4, &value, 8);
}

static Elf64_Phdr *elf_phdr(struct elf_img *e, unsigned i)
{
	return (Elf64_Phdr *)(e->b + sizeof(Elf64_Ehdr)) + i;
}

static Elf64_Ehdr *elf_ehdr(struct elf_img *e)
{
	return (Elf64_Ehdr *)e->b;
}

static void make_elf(struct elf_img *e)
{
	memset(e, 0, sizeof(*e));
	Elf64_Ehdr *eh = elf_ehdr(e);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = 0xffffffff81000000ULL;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 2;
	*elf_phdr(e, 0) = (Elf64_Phdr){ .p_type = PT_LOAD,
		                        .p_offset = ELF_SEG_OFF,
		                        .p_vaddr = 0xffffffff81000000ULL,
		                        .p_paddr = ELF_PADDR,
		                        .p_filesz = SEG_FILESZ,
		                        .p_memsz = SEG_MEMSZ,
		                        .p_align = 0x1000 };
	*elf_phdr(e, 1) = (Elf64_Phdr){ .p_type = PT_NOTE,
		                        .p_offset = ELF_NOTE_OFF,
		                        .p_filesz = ELF_NOTES_SIZE,
		                        .p_align = 4 };
	put_note(e->b + ELF_NOTE_OFF, "GNU", 3, 0x1122334455667788ULL);
	put_note(e->b + ELF_NOTE_OFF + ELF_NOTES_SIZE / 2, "Xen", 18, ELF_ENTRY);
	for (unsigned i = 0; i < SEG_FILESZ; i++)
		e->b[ELF_SEG_OFF + i] = (uint8_t)(i + 1);
	_Static_assert(ELF_NOTE_OFF + ELF_NOTES_SIZE <= ELF_SEG_OFF, "test image layout");
}

/* A bzImage with 4 setup sectors and a 16 KiB "protected-mode kernel". */
#define BZ_SETUP_SECTS 4
#define BZ_PM_OFF      ((BZ_SETUP_SECTS + 1) * 512)
#define BZ_PM_LEN      0x4000
#define BZ_SIZE        (BZ_PM_OFF + BZ_PM_LEN)
#define BZ_INIT_SIZE   0x800000
#define BZ_PREF        0x1000000

struct bz_img {
	uint8_t b[BZ_SIZE];
};

static struct setup_header *bz_hdr(struct bz_img *z)
{
	return (struct setup_header *)(z->b + 0x1f1);
}

static void make_bz(struct bz_img *z)
{
	memset(z, 0, sizeof(*z));
	struct setup_header *h = bz_hdr(z);
	h->setup_sects = BZ_SETUP_SECTS;
	h->syssize = BZ_PM_LEN / 16;
	h->boot_flag = 0xaa55;
	/* A short jump over the header: its second byte says where it ends. */
	h->jump = (uint16_t)(0xeb | (0x26c - 0x202) << 8);
	memcpy(&h->header, "HdrS", 4);
	h->version = 0x020f;
	h->loadflags = LOADED_HIGH;
	h->initrd_addr_max = 0x7fffffff;
	h->kernel_alignment = 0x200000;
	h->relocatable_kernel = 1;
	h->xloadflags = XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G;
	h->cmdline_size = 2047;
	h->pref_address = BZ_PREF;
	h->init_size = BZ_INIT_SIZE;
	for (unsigned i = 0; i < BZ_PM_LEN; i++)
		z->b[BZ_PM_OFF + i] = (uint8_t)(i * 7);
}

static int load(const struct guest_mem *m, const void *img, size_t len, struct x86_kernel *k,
                char *err)
{
	err[0] = 0;
	return x86_load_kernel(m, img, len, k, err, 160);
}

/* ---- loader: ELF ---------------------------------------------------------- */

START_TEST(elf_pvh_loads)
{
	struct guest_mem m = mem_new(64 * MiB);
	memset(m.base, 0xaa, m.ram_size);
	struct elf_img e;
	make_elf(&e);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, e.b, sizeof(e.b), &k, err), 0);
	ck_assert_int_eq(k.mode, X86_BOOT_PVH);
	ck_assert_uint_eq(k.entry, ELF_ENTRY);
	ck_assert_uint_eq(k.load_addr, ELF_PADDR);
	ck_assert_uint_eq(k.load_end, ELF_PADDR + SEG_MEMSZ);
	/* filesz copied, the rest of memsz zeroed, nothing past it touched */
	ck_assert_mem_eq(gmem_ptr(&m, ELF_PADDR, SEG_FILESZ), e.b + ELF_SEG_OFF, SEG_FILESZ);
	for (uint64_t a = ELF_PADDR + SEG_FILESZ; a < ELF_PADDR + SEG_MEMSZ; a++)
		ck_assert_uint_eq(rd8(&m, a), 0);
	ck_assert_uint_eq(rd8(&m, ELF_PADDR + SEG_MEMSZ), 0xaa);
	ck_assert_uint_eq(rd8(&m, ELF_PADDR - 1), 0xaa);

	/* A 4-byte note value is accepted as well. */
	Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = 4, .n_type = 18 };
	uint8_t *x = e.b + ELF_NOTE_OFF;
	memcpy(x, &nh, sizeof(nh));
	memcpy(x + sizeof(nh), "Xen", 4);
	uint32_t v = (uint32_t)ELF_ENTRY + 4;
	memcpy(x + sizeof(nh) + 4, &v, 4);
	elf_phdr(&e, 1)->p_filesz = sizeof(nh) + 8;
	ck_assert_int_eq(load(&m, e.b, sizeof(e.b), &k, err), 0);
	ck_assert_uint_eq(k.entry, ELF_ENTRY + 4);
	gmem_destroy(&m);
}
END_TEST

/* Loads e into 64 MiB and expects rc with msg somewhere in the reason. */
static void expect_elf_error(struct elf_img *e, size_t len, int rc, const char *msg)
{
	struct guest_mem m = mem_new(64 * MiB);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, e->b, len, &k, err), rc);
	ck_assert_msg(strstr(err, msg), "error '%s' lacks '%s'", err, msg);
	ck_assert_ptr_null(memchr(err, '\n', strlen(err)));
	gmem_destroy(&m);
}

START_TEST(elf_bad_images_rejected)
{
	struct elf_img e;

	make_elf(&e); /* truncated program header table */
	expect_elf_error(&e, sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) + 8, -ENOEXEC,
	                 "program headers");

	make_elf(&e);
	expect_elf_error(&e, 20, -ENOEXEC, "too short");

	make_elf(&e); /* segment past the end of RAM */
	elf_phdr(&e, 0)->p_paddr = 64 * MiB - 0x1000;
	expect_elf_error(&e, sizeof(e.b), -EFBIG, "outside guest RAM");

	make_elf(&e); /* p_paddr + p_memsz wraps */
	elf_phdr(&e, 0)->p_paddr = UINT64_MAX - 0x10;
	expect_elf_error(&e, sizeof(e.b), -EFBIG, "outside guest RAM");

	make_elf(&e); /* p_offset + p_filesz overflows */
	elf_phdr(&e, 0)->p_offset = UINT64_MAX - 0x10;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "past the end of the file");

	make_elf(&e); /* segment data cut off */
	expect_elf_error(&e, sizeof(e.b) - 1, -ENOEXEC, "past the end of the file");

	make_elf(&e); /* note segment past the end of the file */
	elf_phdr(&e, 1)->p_filesz = UINT64_MAX;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "note segment");

	make_elf(&e); /* no PVH note */
	elf_ehdr(&e)->e_phnum = 1;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "no PVH entry note (build with CONFIG_PVH)");

	make_elf(&e); /* a Xen note of another type is not the entry */
	e.b[ELF_NOTE_OFF + ELF_NOTES_SIZE / 2 + 8] = 17;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "no PVH entry note");

	make_elf(&e); /* note longer than its segment */
	elf_phdr(&e, 1)->p_filesz = ELF_NOTES_SIZE - 1;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "truncated ELF note");

	make_elf(&e); /* entry outside every loaded segment */
	put_note(e.b + ELF_NOTE_OFF + ELF_NOTES_SIZE / 2, "Xen", 18, 0x200000);
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "not inside a loaded segment");

	make_elf(&e); /* entry above 4 GiB */
	put_note(e.b + ELF_NOTE_OFF + ELF_NOTES_SIZE / 2, "Xen", 18, 1ULL << 32);
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "not a 32-bit address");

	make_elf(&e);
	elf_ehdr(&e)->e_machine = EM_386;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "x86_64");

	make_elf(&e);
	elf_ehdr(&e)->e_ident[EI_CLASS] = ELFCLASS32;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "ELF64");

	make_elf(&e);
	elf_ehdr(&e)->e_type = ET_DYN;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "not an executable");

	make_elf(&e);
	elf_phdr(&e, 0)->p_filesz = SEG_MEMSZ + 1;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "filesz > memsz");

	make_elf(&e); /* would overwrite the boot structures */
	elf_phdr(&e, 0)->p_paddr = 0x7000;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "below 1 MiB");

	make_elf(&e);
	elf_ehdr(&e)->e_phentsize = 32;
	expect_elf_error(&e, sizeof(e.b), -ENOEXEC, "program header table");

	uint8_t junk[600] = { 1, 2, 3 };
	struct guest_mem m = mem_new(4 * MiB);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, junk, sizeof(junk), &k, err), -ENOEXEC);
	ck_assert_ptr_nonnull(strstr(err, "neither"));
	ck_assert_int_eq(load(&m, NULL, 0, &k, err), -ENOEXEC);
	gmem_destroy(&m);
}
END_TEST

/* ---- loader: bzImage ------------------------------------------------------ */

START_TEST(bzimage_loads)
{
	struct guest_mem m = mem_new(256 * MiB);
	struct bz_img z;
	make_bz(&z);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	ck_assert_int_eq(k.mode, X86_BOOT_LINUX64);
	ck_assert_uint_eq(k.entry, X86_KERNEL_LOAD + 0x200);
	ck_assert_uint_eq(k.load_addr, X86_KERNEL_LOAD);
	/* the decompressor's space at pref_address counts as used */
	ck_assert_uint_eq(k.load_end, BZ_PREF + BZ_INIT_SIZE);
	ck_assert_mem_eq(gmem_ptr(&m, X86_KERNEL_LOAD, BZ_PM_LEN), z.b + BZ_PM_OFF, BZ_PM_LEN);
	ck_assert_mem_eq(&k.hdr, bz_hdr(&z), sizeof(k.hdr));

	/* setup_sects 0 means 4 */
	bz_hdr(&z)->setup_sects = 0;
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	ck_assert_uint_eq(k.entry, X86_KERNEL_LOAD + 0x200);
	ck_assert_mem_eq(gmem_ptr(&m, X86_KERNEL_LOAD, BZ_PM_LEN), z.b + BZ_PM_OFF, BZ_PM_LEN);

	/* a header that ends early leaves the fields past its end zero */
	make_bz(&z);
	bz_hdr(&z)->jump = (uint16_t)(0xeb | (0x264 - 0x202) << 8);
	bz_hdr(&z)->handover_offset = 0x1234;
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	ck_assert_uint_eq(k.hdr.init_size, BZ_INIT_SIZE);
	ck_assert_uint_eq(k.hdr.handover_offset, 0);
	gmem_destroy(&m);
}
END_TEST

static void expect_bz_error(struct bz_img *z, size_t len, uint64_t ram, int rc, const char *msg)
{
	struct guest_mem m = mem_new(ram);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, z->b, len, &k, err), rc);
	ck_assert_msg(strstr(err, msg), "error '%s' lacks '%s'", err, msg);
	gmem_destroy(&m);
}

START_TEST(bzimage_bad_images_rejected)
{
	struct bz_img z;

	make_bz(&z);
	bz_hdr(&z)->version = 0x020a;
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "2.10 is too old");

	make_bz(&z);
	bz_hdr(&z)->xloadflags = 0;
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "XLF_KERNEL_64");

	make_bz(&z); /* kernel working space beyond RAM */
	expect_bz_error(&z, sizeof(z.b), 16 * MiB, -EFBIG, "init_size");

	make_bz(&z);
	bz_hdr(&z)->init_size = 0;
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "init_size");

	make_bz(&z); /* file shorter than syssize says */
	expect_bz_error(&z, sizeof(z.b) - 16, 256 * MiB, -ENOEXEC, "truncated");

	make_bz(&z); /* setup sectors reach the end of the file */
	bz_hdr(&z)->setup_sects = 200;
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "setup code");

	make_bz(&z); /* header claims to end past the file */
	expect_bz_error(&z, 0x250, 256 * MiB, -ENOEXEC, "setup header is truncated");

	make_bz(&z); /* header too short to hold init_size */
	bz_hdr(&z)->jump = (uint16_t)(0xeb | (0x230 - 0x202) << 8);
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "too short");

	make_bz(&z);
	z.b[0x1fe] = 0x55;
	z.b[0x1ff] = 0x55;
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "neither");

	make_bz(&z);
	memcpy(&bz_hdr(&z)->header, "HdrX", 4);
	expect_bz_error(&z, sizeof(z.b), 256 * MiB, -ENOEXEC, "neither");
}
END_TEST

/* ---- e820 ----------------------------------------------------------------- */

static void expect_entry(const struct boot_e820_entry *e, uint64_t addr, uint64_t size,
                         uint32_t type)
{
	ck_assert_uint_eq(e->addr, addr);
	ck_assert_uint_eq(e->size, size);
	ck_assert_uint_eq(e->type, type);
}

START_TEST(e820_256m)
{
	struct guest_mem m;
	gmem_layout(&m, 256 * MiB, X86_MMIO_HOLE);
	struct boot_e820_entry e[X86_E820_MAX];
	ck_assert_int_eq(x86_build_e820(&m, e, X86_E820_MAX), 3);
	expect_entry(&e[0], 0, 0x9fc00, X86_E820_RAM);
	expect_entry(&e[1], 0x9fc00, 0x100000 - 0x9fc00, X86_E820_RESERVED);
	expect_entry(&e[2], 0x100000, 256 * MiB - 0x100000, X86_E820_RAM);
	ck_assert_int_eq(x86_build_e820(&m, e, 2), -ENOSPC);
}
END_TEST

START_TEST(e820_4g_splits_around_hole)
{
	struct guest_mem m;
	gmem_layout(&m, 4 * GiB, X86_MMIO_HOLE);
	struct boot_e820_entry e[X86_E820_MAX];
	ck_assert_int_eq(x86_build_e820(&m, e, X86_E820_MAX), 4);
	expect_entry(&e[0], 0, 0x9fc00, X86_E820_RAM);
	expect_entry(&e[1], 0x9fc00, 0x60400, X86_E820_RESERVED);
	expect_entry(&e[2], 0x100000, X86_MMIO_HOLE_START - 0x100000, X86_E820_RAM);
	expect_entry(&e[3], X86_MMIO_HOLE_END, 4 * GiB - X86_MMIO_HOLE_START, X86_E820_RAM);
	/* nothing in the hole, where the IOAPIC, LAPIC and virtio devices live */
	for (int i = 0; i < 4; i++)
		ck_assert(e[i].addr + e[i].size <= X86_MMIO_DEVICES_START ||
		          e[i].addr >= X86_MMIO_HOLE_END);
	ck_assert_int_eq(x86_build_e820(&m, e, 3), -ENOSPC);

	/* A tiny guest still gets the reserved range, after its RAM. */
	gmem_layout(&m, 512 * 1024, X86_MMIO_HOLE);
	ck_assert_int_eq(x86_build_e820(&m, e, X86_E820_MAX), 2);
	expect_entry(&e[0], 0, 512 * 1024, X86_E820_RAM);
	ck_assert_uint_eq(e[1].type, X86_E820_RESERVED);
}
END_TEST

/* ---- zero page and PVH start_info ------------------------------------------ */

START_TEST(zero_page_contents)
{
	struct guest_mem m = mem_new(256 * MiB);
	memset(m.base, 0xcc, 1 * MiB);
	struct bz_img z;
	make_bz(&z);
	bz_hdr(&z)->setup_data = 0xdeadbeef; /* must not reach the guest */
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	struct x86_boot_cfg c = { .cmdline = "console=ttyS0 reboot=k", .ncpus = 2 };
	ck_assert_int_eq(x86_place_initrd(&m, &k, 3 * MiB + 5, &c.initrd_gpa), 0);
	c.initrd_size = 3 * MiB + 5;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);

	/* Offsets straight from Documentation/x86/boot.rst. */
	const uint64_t zp = X86_ZERO_PAGE;
	ck_assert_uint_eq(rd8(&m, zp + 0x210), 0xff);                       /* type_of_loader */
	ck_assert_uint_eq(rd8(&m, zp + 0x211), LOADED_HIGH | CAN_USE_HEAP); /* loadflags */
	ck_assert_uint_eq(rd32(&m, zp + 0x228), X86_CMDLINE);               /* cmd_line_ptr */
	ck_assert_uint_eq(rd32(&m, zp + 0x0c8), 0);                         /* ext_cmd_line_ptr */
	ck_assert_uint_eq(rd32(&m, zp + 0x218), c.initrd_gpa);              /* ramdisk_image */
	ck_assert_uint_eq(rd32(&m, zp + 0x21c), c.initrd_size);             /* ramdisk_size */
	ck_assert_uint_eq(rd32(&m, zp + 0x0c0), 0);                         /* ext_ramdisk_image */
	ck_assert_uint_eq(rd32(&m, zp + 0x0c4), 0);                         /* ext_ramdisk_size */
	ck_assert_uint_eq(rd32(&m, zp + 0x202), 0x53726448);                /* "HdrS" */
	ck_assert_uint_eq(rd32(&m, zp + 0x260), BZ_INIT_SIZE);              /* init_size */
	ck_assert_uint_eq(rd64(&m, zp + 0x250), 0);                         /* setup_data */
	ck_assert_uint_eq(rd8(&m, zp + 0x1ef), 0); /* sentinel: a clean zero page */
	ck_assert_uint_eq(rd8(&m, zp + 0x1e8), 3); /* e820_entries */
	ck_assert_uint_eq(rd64(&m, zp + 0x2d0 + 20 * 1), 0x9fc00);
	ck_assert_uint_eq(rd32(&m, zp + 0x2d0 + 20 * 1 + 16), X86_E820_RESERVED);
	ck_assert_uint_eq(rd64(&m, zp + 0x2d0 + 20 * 2), 0x100000);
	ck_assert_uint_eq(rd64(&m, zp + 0x2d0 + 20 * 2 + 8), 255 * MiB);
	ck_assert_uint_eq(rd32(&m, zp + 0x2d0 + 20 * 3 + 16), 0); /* no fourth entry */

	ck_assert_str_eq((const char *)gmem_ptr(&m, X86_CMDLINE, 1), c.cmdline);
	ck_assert_mem_eq(m.base + X86_MPTABLE, "_MP_", 4);
	gmem_destroy(&m);
}
END_TEST

START_TEST(pvh_start_info_contents)
{
	struct guest_mem m = mem_new(4 * GiB + 64 * MiB);
	struct elf_img e;
	make_elf(&e);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, e.b, sizeof(e.b), &k, err), 0);
	struct x86_boot_cfg c = { .cmdline = "console=ttyS0", .ncpus = 1 };
	ck_assert_int_eq(x86_place_initrd(&m, &k, 1 * MiB, &c.initrd_gpa), 0);
	ck_assert_uint_eq(c.initrd_gpa, X86_MMIO_HOLE_START - MiB); /* top of low RAM */
	c.initrd_size = 1 * MiB;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);

	struct pvh_start_info si;
	ck_assert_int_eq(gmem_read(&m, X86_PVH_START_INFO, &si, sizeof(si)), 0);
	ck_assert_uint_eq(si.magic, 0x336ec578);
	ck_assert_uint_eq(si.version, 1);
	ck_assert_uint_eq(si.cmdline_paddr, X86_CMDLINE);
	ck_assert_uint_eq(si.rsdp_paddr, 0);
	ck_assert_uint_eq(si.nr_modules, 1);
	ck_assert_uint_eq(si.modlist_paddr, X86_PVH_MODLIST);
	ck_assert_uint_eq(rd64(&m, si.modlist_paddr), c.initrd_gpa);
	ck_assert_uint_eq(rd64(&m, si.modlist_paddr + 8), c.initrd_size);
	ck_assert_uint_eq(si.memmap_entries, 4);
	ck_assert_uint_eq(si.memmap_paddr, X86_PVH_MEMMAP);
	struct pvh_memmap_entry mm[4];
	ck_assert_int_eq(gmem_read(&m, si.memmap_paddr, mm, sizeof(mm)), 0);
	ck_assert_uint_eq(mm[0].addr, 0);
	ck_assert_uint_eq(mm[0].type, 1);
	ck_assert_uint_eq(mm[1].type, 2);
	ck_assert_uint_eq(mm[3].addr, 4 * GiB);
	ck_assert_uint_eq(mm[3].size, GiB + 64 * MiB);
	ck_assert_uint_eq(mm[3].reserved, 0);
	ck_assert_str_eq((const char *)gmem_ptr(&m, X86_CMDLINE, 1), "console=ttyS0");

	/* Without an initrd there are no modules. */
	c.initrd_size = 0;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(gmem_read(&m, X86_PVH_START_INFO, &si, sizeof(si)), 0);
	ck_assert_uint_eq(si.nr_modules, 0);
	ck_assert_uint_eq(si.modlist_paddr, 0);
	gmem_destroy(&m);
}
END_TEST

START_TEST(cmdline_too_long_rejected)
{
	struct guest_mem m = mem_new(64 * MiB);
	struct elf_img e;
	make_elf(&e);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, e.b, sizeof(e.b), &k, err), 0);

	static char line[X86_CMDLINE_MAX + 8];
	memset(line, 'a', sizeof(line) - 1);
	struct x86_boot_cfg c = { .cmdline = line, .ncpus = 1 };
	/* PVH: 2047 characters plus the NUL is the most Linux copies */
	line[2048] = 0;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -E2BIG);
	ck_assert_ptr_nonnull(strstr(err, "too long"));
	line[2047] = 0;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen((const char *)gmem_ptr(&m, X86_CMDLINE, 1)), 2047);
	c.cmdline = NULL; /* empty */
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(rd8(&m, X86_CMDLINE), 0);

	/* bzImage: the header's cmdline_size, not counting the NUL */
	struct bz_img z;
	make_bz(&z);
	bz_hdr(&z)->cmdline_size = 16;
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	c.cmdline = "0123456789abcdefg";
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -E2BIG);
	c.cmdline = "0123456789abcdef";
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);
	/* a generous kernel is still held to the VMM's area */
	bz_hdr(&z)->cmdline_size = 1 << 20;
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	memset(line, 'b', sizeof(line) - 1);
	line[X86_CMDLINE_MAX] = 0;
	c.cmdline = line;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -E2BIG);
	line[X86_CMDLINE_MAX - 1] = 0;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);

	c.ncpus = 0;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -EINVAL);
	c.ncpus = MPTABLE_MAX_CPUS + 1;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -EINVAL);
	gmem_destroy(&m);
}
END_TEST

/* ---- initrd placement ---------------------------------------------------- */

START_TEST(initrd_placement)
{
	struct guest_mem m = mem_new(256 * MiB);
	struct bz_img z;
	make_bz(&z);
	struct x86_kernel k;
	char err[160];
	ck_assert_int_eq(load(&m, z.b, sizeof(z.b), &k, err), 0);
	uint64_t g = 1;
	ck_assert_int_eq(x86_place_initrd(&m, &k, 10 * MiB + 100, &g), 0);
	ck_assert_uint_eq(g % X86_PAGE_SIZE, 0);
	ck_assert_uint_eq(g, (256 * MiB - 10 * MiB - 100) & ~0xfffULL);
	ck_assert_uint_ge(g, k.load_end);

	/* exactly what is left above the kernel fits; a page more does not */
	uint64_t room = 256 * MiB - k.load_end;
	ck_assert_int_eq(x86_place_initrd(&m, &k, room, &g), 0);
	ck_assert_uint_eq(g, k.load_end);
	ck_assert_int_eq(x86_place_initrd(&m, &k, room + 1, &g), -ENOSPC);
	ck_assert_int_eq(x86_place_initrd(&m, &k, 1ULL << 40, &g), -ENOSPC);
	ck_assert_int_eq(x86_place_initrd(&m, &k, 0, &g), -EINVAL);

	/* initrd_addr_max caps the end (inclusive) */
	k.hdr.initrd_addr_max = 128 * MiB - 1;
	ck_assert_int_eq(x86_place_initrd(&m, &k, 1 * MiB, &g), 0);
	ck_assert_uint_eq(g, 127 * MiB);

	/* setup_boot refuses an initrd over the kernel or past the limit */
	struct x86_boot_cfg c = { .ncpus = 1, .initrd_gpa = BZ_PREF, .initrd_size = MiB };
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "overlaps the kernel"));
	c.initrd_gpa = 127 * MiB + 4096;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -EINVAL);
	c.initrd_gpa = 255 * MiB + 4096;
	k.hdr.initrd_addr_max = 0x7fffffff;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not in usable low RAM"));
	c.initrd_gpa = 255 * MiB;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);
	gmem_destroy(&m);

	/* With RAM above 4 GiB the initrd still goes below the hole. */
	m = mem_new(4 * GiB + 4096);
	struct elf_img e;
	make_elf(&e);
	ck_assert_int_eq(load(&m, e.b, sizeof(e.b), &k, err), 0);
	ck_assert_int_eq(x86_place_initrd(&m, &k, 4096, &g), 0);
	ck_assert_uint_eq(g, X86_MMIO_HOLE_START - 4096);
	gmem_destroy(&m);
}
END_TEST

/* ---- MP table ------------------------------------------------------------ */

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

static void check_mptable(unsigned ncpus)
{
	struct guest_mem m = mem_new(4 * MiB);
	memset(m.base, 0x5a, m.ram_size);
	ck_assert_int_eq(mptable_write(&m, ncpus), 0);
	const uint8_t *mpf = m.base + X86_MPTABLE;
	ck_assert_mem_eq(mpf, "_MP_", 4);
	ck_assert_uint_eq(mpf[8], 1); /* length in paragraphs */
	ck_assert_uint_eq(mpf[9], 4); /* spec 1.4 */
	ck_assert_uint_eq(sum(mpf, 16), 0);
	uint32_t cfg_gpa;
	memcpy(&cfg_gpa, mpf + 4, 4);
	ck_assert_uint_eq(cfg_gpa, X86_MPTABLE + 16);

	const uint8_t *cfg = m.base + cfg_gpa;
	uint16_t len, count;
	uint32_t lapic;
	ck_assert_mem_eq(cfg, "PCMP", 4);
	memcpy(&len, cfg + 4, 2);
	memcpy(&count, cfg + 34, 2);
	memcpy(&lapic, cfg + 36, 4);
	ck_assert_uint_eq(sum(cfg, len), 0);
	ck_assert_uint_eq(lapic, 0xfee00000);
	ck_assert_uint_eq(16 + len, mptable_size(ncpus));
	ck_assert_uint_le(X86_MPTABLE + 16 + len, X86_MPTABLE_END);

	unsigned cpus = 0, buses = 0, ioapics = 0, ioints = 0, lints = 0;
	const uint8_t *p = cfg + 44;
	for (unsigned i = 0; i < count; i++) {
		switch (p[0]) {
		case 0:
			ck_assert_uint_eq(p[1], cpus); /* APIC id */
			ck_assert_uint_eq(p[2], 0x14);
			ck_assert_uint_eq(p[3], cpus == 0 ? 3 : 1); /* enabled, BSP */
			cpus++;
			p += 20;
			break;
		case 1:
			ck_assert_mem_eq(p + 2, "ISA   ", 6);
			buses++;
			p += 8;
			break;
		case 2: {
			uint32_t addr;
			memcpy(&addr, p + 4, 4);
			ck_assert_uint_eq(p[1], ncpus);
			ck_assert_uint_eq(p[2], 0x11);
			ck_assert_uint_eq(p[3], 1);
			ck_assert_uint_eq(addr, 0xfec00000);
			ioapics++;
			p += 8;
			break;
		}
		case 3: {
			uint16_t flags;
			memcpy(&flags, p + 2, 2);
			ck_assert_uint_eq(p[1], 0);                      /* INT */
			ck_assert_uint_eq(p[5], ioints);                 /* source IRQ */
			ck_assert_uint_eq(p[6], ncpus);                  /* IOAPIC id */
			ck_assert_uint_eq(p[7], ioints);                 /* pin */
			ck_assert_uint_eq(flags, ioints < 16 ? 0 : 0x5); /* edge, high */
			ioints++;
			p += 8;
			break;
		}
		case 4:
			ck_assert_uint_eq(p[1], lints == 0 ? 3 : 1); /* ExtINT, NMI */
			ck_assert_uint_eq(p[6], 0xff);
			ck_assert_uint_eq(p[7], lints);
			lints++;
			p += 8;
			break;
		default:
			ck_abort_msg("unknown MP entry type %u", p[0]);
		}
	}
	ck_assert_uint_eq((size_t)(p - cfg), len);
	ck_assert_uint_eq(cpus, ncpus);
	ck_assert_uint_eq(buses, 1);
	ck_assert_uint_eq(ioapics, 1);
	ck_assert_uint_eq(ioints, 24);
	ck_assert_uint_eq(lints, 2);
	ck_assert_uint_eq(m.base[X86_MPTABLE + mptable_size(ncpus)], 0x5a); /* no overrun */
	gmem_destroy(&m);
}

START_TEST(mptable_layout)
{
	check_mptable(1);
	check_mptable(4);
	check_mptable(MPTABLE_MAX_CPUS);

	struct guest_mem m = mem_new(4 * MiB);
	ck_assert_int_eq(mptable_write(&m, 0), -EINVAL);
	ck_assert_int_eq(mptable_write(&m, MPTABLE_MAX_CPUS + 1), -EINVAL);
	gmem_destroy(&m);
	m = mem_new(512 * 1024); /* no RAM at the EBDA */
	ck_assert_int_eq(mptable_write(&m, 1), -EFAULT);
	gmem_destroy(&m);
}
END_TEST

/* ---- the real kernel, when one has been built ------------------------------ */

static void try_real_kernel(const char *path, enum x86_boot_mode want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("test_x86_boot: %s absent, skipped\n", path);
		return;
	}
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(img, MAP_FAILED);
	struct guest_mem m = mem_new(512 * MiB);
	struct x86_kernel k;
	char err[160];
	int rc = load(&m, img, (size_t)st.st_size, &k, err);
	ck_assert_msg(rc == 0, "%s: %s", path, err);
	ck_assert_int_eq(k.mode, want);
	printf("test_x86_boot: %s: %s entry 0x%llx, kernel [0x%llx, 0x%llx)\n", path,
	       k.mode == X86_BOOT_PVH ? "PVH" : "64-bit", (unsigned long long)k.entry,
	       (unsigned long long)k.load_addr, (unsigned long long)k.load_end);
	struct x86_boot_cfg c = { .cmdline = "console=ttyS0", .ncpus = 2 };
	ck_assert_int_eq(x86_place_initrd(&m, &k, 4 * MiB, &c.initrd_gpa), 0);
	c.initrd_size = 4 * MiB;
	ck_assert_int_eq(x86_setup_boot(&m, &k, &c, err, sizeof(err)), 0);
	gmem_destroy(&m);
	munmap(img, (size_t)st.st_size);
	close(fd);
}

START_TEST(real_kernel_if_built)
{
	try_real_kernel("build/vmlinux", X86_BOOT_PVH);
	try_real_kernel("build/bzImage", X86_BOOT_LINUX64);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("x86_boot");
	TCase *tc = tcase_create("loader");
	tcase_add_test(tc, elf_pvh_loads);
	tcase_add_test(tc, elf_bad_images_rejected);
	tcase_add_test(tc, bzimage_loads);
	tcase_add_test(tc, bzimage_bad_images_rejected);
	tcase_add_test(tc, real_kernel_if_built);
	suite_add_tcase(s, tc);
	tc = tcase_create("boot");
	tcase_add_test(tc, e820_256m);
	tcase_add_test(tc, e820_4g_splits_around_hole);
	tcase_add_test(tc, zero_page_contents);
	tcase_add_test(tc, pvh_start_info_contents);
	tcase_add_test(tc, cmdline_too_long_rejected);
	tcase_add_test(tc, initrd_placement);
	suite_add_tcase(s, tc);
	tc = tcase_create("mptable");
	tcase_add_test(tc, mptable_layout);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
