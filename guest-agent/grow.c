/* PID 1 grows the root file system to its disk: a sandbox started with
 * `cove run --disk-size` has a block device larger than the image's ext4,
 * and ext4 grows online through one ioctl (no resize2fs in the guest). */
#include "grow.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define EXT4_SUPER_MAGIC   0xEF53
#define EXT4_IOC_RESIZE_FS _IOW('f', 16, uint64_t) /* fs/ext4/ext4.h */

/* Superblock fields (1024 bytes at byte 1024 of the device; little-endian). */
#define SB_OFFSET           1024
#define SB_BLOCKS_LO        0x04
#define SB_LOG_BLOCK_SIZE   0x18
#define SB_MAGIC            0x38
#define SB_FEATURE_INCOMPAT 0x60
#define SB_BLOCKS_HI        0x150
#define INCOMPAT_64BIT      0x80

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The root device's name ("vda") from sysfs, for dev; 0 or -errno. */
static int dev_name(dev_t dev, char *out, size_t len)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	char *p = strstr(buf, "DEVNAME=");
	if (!p)
		return -ENOENT;
	p += 8;
	size_t k = strcspn(p, "\n");
	if (k == 0 || k >= len || memchr(p, '/', k))
		return -EINVAL;
	memcpy(out, p, k);
	out[k] = 0;
	return 0;
}

void agent_grow_root(void)
{
	struct statfs sf;
	struct stat st;
	if (statfs("/", &sf) < 0 || sf.f_type != EXT4_SUPER_MAGIC || stat("/", &st) < 0)
		return;
	char name[32], dev[48];
	if (dev_name(st.st_dev, name, sizeof(name)) < 0)
		return; /* not on a block device we can name */
	snprintf(dev, sizeof(dev), "/dev/%s", name);
	int fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	uint64_t bytes = 0;
	uint8_t sb[1024];
	int ok = ioctl(fd, BLKGETSIZE64, &bytes) == 0 &&
	         pread(fd, sb, sizeof(sb), SB_OFFSET) == (ssize_t)sizeof(sb);
	close(fd);
	if (!ok || (sb[SB_MAGIC] | sb[SB_MAGIC + 1] << 8) != EXT4_SUPER_MAGIC)
		return;
	uint32_t log = le32(sb + SB_LOG_BLOCK_SIZE);
	if (log > 6)
		return; /* blocks of 1 KiB to 64 KiB only */
	uint64_t bsize = 1024ULL << log;
	uint64_t blocks = le32(sb + SB_BLOCKS_LO);
	if (le32(sb + SB_FEATURE_INCOMPAT) & INCOMPAT_64BIT)
		blocks |= (uint64_t)le32(sb + SB_BLOCKS_HI) << 32;
	uint64_t want = bytes / bsize;
	if (want <= blocks)
		return;
	int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return;
	int r = ioctl(root, EXT4_IOC_RESIZE_FS, &want);
	int e = errno;
	close(root);
	if (r < 0)
		fprintf(stderr, "cove-agent: cannot grow / on %s to %llu MiB: %s\n", dev,
		        (unsigned long long)(want * bsize >> 20), strerror(e));
	else
		fprintf(stderr, "cove-agent: grew / on %s from %llu MiB to %llu MiB\n", dev,
		        (unsigned long long)(blocks * bsize >> 20),
		        (unsigned long long)(want * bsize >> 20));
}
