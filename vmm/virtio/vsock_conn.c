#include "virtio/vsock_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void vsock_link_init(struct vsock_link *l)
{
	l->prev = l->next = l;
}

bool vsock_link_linked(const struct vsock_link *l)
{
	return l->next != l;
}

void vsock_link_add_tail(struct vsock_link *head, struct vsock_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

void vsock_link_del(struct vsock_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	vsock_link_init(l);
}

/* ---- host-bound ring ----------------------------------------------------- */

int vsock_ring_put(struct vsock_ring *r, const struct iovec *iov, uint32_t n, size_t len)
{
	if (len > r->cap - r->len)
		return -ENOBUFS;
	if (len == 0)
		return 0;
	if (!r->buf) {
		r->buf = malloc(r->cap);
		if (!r->buf)
			return -ENOMEM;
	}
	size_t done = 0;
	for (uint32_t i = 0; i < n && done < len; i++) {
		const uint8_t *src = iov[i].iov_base;
		size_t left = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
		while (left) {
			uint32_t tail = (r->head + r->len) % r->cap;
			size_t chunk = r->cap - tail;
			if (chunk > left)
				chunk = left;
			memcpy(r->buf + tail, src, chunk);
			r->len += (uint32_t)chunk;
			src += chunk;
			left -= chunk;
			done += chunk;
		}
	}
	return 0;
}

int vsock_ring_peek(const struct vsock_ring *r, struct iovec iov[2])
{
	if (r->len == 0)
		return 0;
	uint32_t first = r->cap - r->head;
	if (first >= r->len) {
		iov[0] = (struct iovec){ .iov_base = r->buf + r->head, .iov_len = r->len };
		return 1;
	}
	iov[0] = (struct iovec){ .iov_base = r->buf + r->head, .iov_len = first };
	iov[1] = (struct iovec){ .iov_base = r->buf, .iov_len = r->len - first };
	return 2;
}

void vsock_ring_consume(struct vsock_ring *r, uint32_t len)
{
	if (len > r->len)
		len = r->len;
	r->len -= len;
	r->head = r->len ? (r->head + len) % r->cap : 0;
}

void vsock_ring_free(struct vsock_ring *r)
{
	free(r->buf);
	r->buf = NULL;
	r->head = r->len = 0;
}

/* ---- credit ------------------------------------------------------------- */

uint32_t vsock_conn_peer_credit(const struct vsock_conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;
	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

bool vsock_conn_credit_low(const struct vsock_conn *c, uint32_t buf_alloc)
{
	/* What the guest believes is still in our buffer. */
	uint32_t seen_in_flight = c->rx_cnt - c->fwd_cnt_sent;
	return c->fwd_cnt != c->fwd_cnt_sent && seen_in_flight >= buf_alloc / 2;
}

/* ---- table -------------------------------------------------------------- */

static unsigned int bucket_of(uint32_t local_port, uint32_t peer_port)
{
	uint32_t h = local_port * 0x9e3779b1u ^ (peer_port + 0x7f4a7c15u) * 0x85ebca6bu;
	return (h ^ (h >> 16)) & (VSOCK_TABLE_BUCKETS - 1);
}

void vsock_table_init(struct vsock_table *t)
{
	memset(t, 0, sizeof(*t));
}

struct vsock_conn *vsock_table_find(const struct vsock_table *t, uint32_t local_port,
                                    uint32_t peer_port)
{
	struct vsock_conn *c = t->buckets[bucket_of(local_port, peer_port)];
	for (; c; c = c->hnext)
		if (c->local_port == local_port && c->peer_port == peer_port)
			return c;
	return NULL;
}

int vsock_table_insert(struct vsock_table *t, struct vsock_conn *c)
{
	if (vsock_table_find(t, c->local_port, c->peer_port))
		return -EEXIST;
	unsigned int b = bucket_of(c->local_port, c->peer_port);
	c->hnext = t->buckets[b];
	t->buckets[b] = c;
	t->count++;
	return 0;
}

void vsock_table_remove(struct vsock_table *t, struct vsock_conn *c)
{
	struct vsock_conn **pp = &t->buckets[bucket_of(c->local_port, c->peer_port)];
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == c) {
			*pp = c->hnext;
			c->hnext = NULL;
			t->count--;
			return;
		}
	}
}

static bool local_port_used(const struct vsock_table *t, uint32_t port)
{
	for (unsigned int b = 0; b < VSOCK_TABLE_BUCKETS; b++)
		for (const struct vsock_conn *c = t->buckets[b]; c; c = c->hnext)
			if (c->local_port == port)
				return true;
	return false;
}

int vsock_table_alloc_port(struct vsock_table *t, uint32_t min, uint32_t *port)
{
	/* More tries than there can be live connections, so a free port is
	 * always found unless the table is absurdly full. */
	for (unsigned int tries = 0; tries <= t->count; tries++) {
		if (t->next_port < min)
			t->next_port = min;
		uint32_t p = t->next_port++;
		if (!local_port_used(t, p)) {
			*port = p;
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

struct vsock_conn *vsock_conn_new(uint32_t local_port, uint32_t peer_port, uint32_t buf_alloc)
{
	struct vsock_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->w.kind = VSOCK_WATCH_CONN;
	c->local_port = local_port;
	c->peer_port = peer_port;
	c->fd = -1;
	c->out.cap = buf_alloc;
	vsock_link_init(&c->rx_link);
	vsock_link_init(&c->timed_link);
	return c;
}

void vsock_conn_free(struct vsock_conn *c)
{
	if (!c)
		return;
	vsock_ring_free(&c->out);
	free(c);
}
