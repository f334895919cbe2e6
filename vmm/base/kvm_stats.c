#include "base/kvm_stats.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "io.h"

static void add(struct kvm_counter *c, size_t max, size_t *n, const char *name, uint64_t v)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(c[i].name, name)) {
			c[i].value += v;
			return;
		}
	if (*n >= max)
		return;
	size_t len = strnlen(name, KVM_STAT_NAME_MAX - 1);
	memcpy(c[*n].name, name, len);
	c[*n].name[len] = '\0';
	c[*n].value = v;
	(*n)++;
}

int kvm_stats_open(int fd)
{
	int sfd = ioctl(fd, KVM_GET_STATS_FD, NULL);
	if (sfd < 0)
		return errno == EINVAL || errno == ENOTTY ? -ENOTSUP : -errno;
	return sfd;
}

int kvm_stats_add(int sfd, struct kvm_counter *c, size_t max, size_t *n)
{
	if (sfd < 0)
		return -ENOTSUP;
	struct kvm_stats_header h;
	int r = pread_all(sfd, &h, sizeof(h), 0);
	if (r < 0)
		goto out;
	if (h.num_desc > 4096 || h.name_size > 4096 || h.name_size == 0) {
		r = -EINVAL;
		goto out;
	}
	size_t dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	uint8_t *descs = malloc(dsz * h.num_desc);
	if (!descs) {
		r = -ENOMEM;
		goto out;
	}
	r = pread_all(sfd, descs, dsz * h.num_desc, h.desc_offset);
	for (uint32_t i = 0; r == 0 && i < h.num_desc; i++) {
		const struct kvm_stats_desc *d = (const void *)(descs + dsz * i);
		if ((d->flags & KVM_STATS_TYPE_MASK) != KVM_STATS_TYPE_CUMULATIVE || d->size != 1)
			continue;
		uint64_t v;
		if (pread_all(sfd, &v, sizeof(v), (off_t)h.data_offset + d->offset) < 0)
			continue;
		char name[KVM_STAT_NAME_MAX];
		size_t len = strnlen(d->name, h.name_size);
		if (len >= sizeof(name))
			len = sizeof(name) - 1;
		memcpy(name, d->name, len);
		name[len] = '\0';
		add(c, max, n, name, v);
	}
	free(descs);
out:
	return r;
}
