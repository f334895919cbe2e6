#include "virtio/iov.h"

#include <string.h>

size_t iov_to_buf(const struct iovec *iov, uint32_t n, uint64_t skip, void *buf, size_t len)
{
	size_t done = 0;
	for (uint32_t i = 0; i < n && done < len; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t take = iov[i].iov_len - (size_t)skip;
		if (take > len - done)
			take = len - done;
		memcpy((uint8_t *)buf + done, (const uint8_t *)iov[i].iov_base + skip, take);
		done += take;
		skip = 0;
	}
	return done;
}

size_t iov_from_buf(const struct iovec *iov, uint32_t n, const void *buf, size_t len)
{
	size_t done = 0;
	for (uint32_t i = 0; i < n && done < len; i++) {
		size_t take = iov[i].iov_len;
		if (take > len - done)
			take = len - done;
		memcpy(iov[i].iov_base, (const uint8_t *)buf + done, take);
		done += take;
	}
	return done;
}

uint64_t iov_drop_front(struct iovec **iov, uint32_t *n, uint64_t bytes)
{
	uint64_t dropped = 0;
	while (*n && dropped < bytes) {
		struct iovec *v = *iov;
		uint64_t want = bytes - dropped;
		if (want < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + want;
			v->iov_len -= (size_t)want;
			return bytes;
		}
		dropped += v->iov_len;
		(*iov)++;
		(*n)--;
	}
	return dropped;
}

uint8_t *iov_pop_last_byte(struct iovec *iov, uint32_t *n)
{
	while (*n && iov[*n - 1].iov_len == 0)
		(*n)--;
	if (!*n)
		return NULL;
	struct iovec *v = &iov[*n - 1];
	v->iov_len--;
	uint8_t *last = (uint8_t *)v->iov_base + v->iov_len;
	if (v->iov_len == 0)
		(*n)--;
	return last;
}
