/* libFuzzer target: a hostile guest driving virtio-blk.  The input is a
 * ring setup plus the contents of guest RAM; the device is brought up
 * through its registers like a driver would, then notified a few times.
 * Everything in RAM (descriptors, avail ring, request headers, discard
 * segments) is the fuzzer's.
 *
 * Input layout (little-endian):
 *   [0]     queue size = 1 << (x % 9)
 *   [1]     bit 0: negotiate EVENT_IDX, bit 1: read-only disk,
 *           bit 2: negotiate INDIRECT_DESC, bits 3-4: notifies - 1
 *   [2..3]  desc ring at x * 16   (wrapped into RAM)
 *   [4..5]  avail ring at x * 2
 *   [6..7]  used ring at x * 4
 *   [8..]   guest RAM from address 0 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "backend/disk_open.h"
#include "base/bus.h"
#include "base/guest_mem.h"
#include "virtio/blk.h"

#define RAM_SIZE  (64 * 1024)
#define DISK_SIZE (64 * 1024)
#define HDR_SIZE  8
#define BASE      0xd0000000ULL

static struct guest_mem g_mem;
static struct disk *g_disk_rw;
static struct disk *g_disk_ro;

static struct disk *open_scratch(bool read_only)
{
	char path[] = "/dev/shm/cove-fuzz-blk-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		strcpy(path, "/tmp/cove-fuzz-blk-XXXXXX");
		fd = mkstemp(path);
	}
	if (fd < 0 || ftruncate(fd, DISK_SIZE) < 0)
		abort(); /* the harness, not the device: no disk, no fuzzing */
	close(fd);
	struct disk *d;
	if (disk_open(path, read_only, &d) < 0)
		abort();
	unlink(path); /* the open fd keeps it alive */
	return d;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (gmem_create(&g_mem, RAM_SIZE, X86_MMIO_HOLE) < 0)
		abort();
	g_disk_rw = open_scratch(false);
	g_disk_ro = open_scratch(true);
	return 0;
}

static void wr(struct virtio_mmio *t, uint64_t reg, uint32_t v)
{
	virtio_mmio_access(t, reg, (uint8_t *)&v, sizeof(v), true);
}

static uint32_t rd(struct virtio_mmio *t, uint64_t reg)
{
	uint32_t v;
	virtio_mmio_access(t, reg, (uint8_t *)&v, sizeof(v), false);
	return v;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR_SIZE)
		return 0;
	uint32_t qsize = 1U << (data[0] % 9);
	uint8_t flags = data[1];
	uint64_t desc = (le16(data + 2) * 16ULL) % RAM_SIZE;
	uint64_t avail = (le16(data + 4) * 2ULL) % RAM_SIZE;
	uint64_t used = (le16(data + 6) * 4ULL) % RAM_SIZE;
	int notifies = ((flags >> 3) & 3) + 1;

	memset(g_mem.base, 0, RAM_SIZE);
	size_t n = size - HDR_SIZE < RAM_SIZE ? size - HDR_SIZE : RAM_SIZE;
	memcpy(g_mem.base, data + HDR_SIZE, n);

	struct bus bus = { 0 };
	struct virtio_mmio_cfg cfg = {
		.base = BASE, .gsi = 5, .vm_fd = -1, .mem = &g_mem, .bus = &bus
	};
	struct vblk *b;
	if (vblk_create(&cfg, (flags & 2) ? g_disk_ro : g_disk_rw, &b) < 0)
		abort();
	struct virtio_mmio *t = vblk_transport(b);

	uint64_t feat = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_BLK_F_FLUSH) |
	                VIRTIO_BIT(VIRTIO_BLK_F_SEG_MAX);
	if (flags & 1)
		feat |= VIRTIO_BIT(VIRTIO_RING_F_EVENT_IDX);
	if (flags & 4)
		feat |= VIRTIO_BIT(VIRTIO_RING_F_INDIRECT_DESC);
	wr(t, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)feat);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(feat >> 32));
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	wr(t, VIRTIO_MMIO_STATUS, st);
	wr(t, VIRTIO_MMIO_QUEUE_SEL, 0);
	wr(t, VIRTIO_MMIO_QUEUE_NUM, qsize);
	wr(t, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)desc);
	wr(t, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)avail);
	wr(t, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)used);
	wr(t, VIRTIO_MMIO_QUEUE_READY, 1);
	wr(t, VIRTIO_MMIO_STATUS, st | VIRTIO_STATUS_DRIVER_OK);

	for (int i = 0; i < notifies; i++) {
		wr(t, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
		wr(t, VIRTIO_MMIO_INTERRUPT_ACK, rd(t, VIRTIO_MMIO_INTERRUPT_STATUS));
	}
	/* Config space reads at every offset must stay in bounds. */
	for (uint32_t off = 0; off < sizeof(struct virtio_blk_config) + 8; off += 4)
		(void)rd(t, VIRTIO_MMIO_CONFIG + off);
	wr(t, VIRTIO_MMIO_STATUS, 0);
	vblk_destroy(b);
	return 0;
}
